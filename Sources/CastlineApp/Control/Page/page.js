// The control page: steers a running castline through its own control API (/status,
// /events, /commands, /delay, /pause, /resume, /swap, /pipeline, /plot.svg, /graph.svg).
// Every figure shown is one the API reported; the one it works out, the programme time
// heard, comes from two of them (logic.js).
"use strict";

const Logic = window.CastlinePage;

// ---- Talking to the API: the token (asked once, kept for this tab only) as a bearer header ----

const tokenKey = "castline-control-token";
let tokenWanted = null;

async function api(path, options = {}) {
  const headers = Object.assign({}, options.headers || {});
  const token = sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, Object.assign({}, options, { headers, cache: "no-store" }));
  if (response.status === 401) {
    askForToken(token ? "That token was refused." : "");
    throw new Error("a control token is needed");
  }
  return response;
}

async function apiJSON(path, options) {
  const response = await api(path, options);
  const body = await response.json().catch(() => ({}));
  return { ok: response.ok, status: response.status, body };
}

function askForToken(message) {
  const form = document.getElementById("token-form");
  form.hidden = false;
  document.getElementById("token-error").textContent = message;
  if (!tokenWanted) tokenWanted = new Promise((resolve) => {
    form.onsubmit = (event) => {
      event.preventDefault();
      sessionStorage.setItem(tokenKey, document.getElementById("token").value);
      document.getElementById("token").value = "";
      form.hidden = true;
      tokenWanted = null;
      resolve();
    };
  });
  return tokenWanted;
}

function setConnection(text, lost) {
  const element = document.getElementById("connection");
  element.textContent = text;
  element.classList.toggle("lost", Boolean(lost));
}

// ---- One pipeline's part of the page ----

const views = new Map();
let commands = [];

class PipelineView {
  constructor(name) {
    this.name = name;
    this.query = `pipeline=${encodeURIComponent(name)}`;
    this.root = document.getElementById("pipeline-template").content.firstElementChild.cloneNode(true);
    this.root.dataset.pipeline = name;
    this.$(".name").textContent = name;
    this.status = null;
    this.dragging = false;
    this.figures = new Map();
    this.plotDue = 0;
    document.getElementById("pipelines").appendChild(this.root);
    this.$(".play-pause").addEventListener("click", () => this.playPause());
    for (const button of this.root.querySelectorAll(".skip")) {
      button.addEventListener("click", () => this.command("delay", { step: Number(button.dataset.step) }));
    }
    this.wireBar();
    this.$(".apply").addEventListener("click", () => this.apply());
    this.$(".reload-file").addEventListener("click", () => this.loadFile());
    const file = this.$(".file");
    file.addEventListener("scroll", () => this.placeErrors());
    file.addEventListener("input", () => this.showLines([]));
    this.root.querySelector("details").addEventListener("toggle", (event) => {
      if (!event.target.open) return;
      if (!file.value) this.loadFile();
      this.drawGraph();
    });
  }

  $(selector) { return this.root.querySelector(selector); }

  takes(command) { return commands.some((c) => c.name === command && c.pipelines.includes(this.name)); }

  show(status) {
    this.status = status;
    const state = status.state;
    const text = this.$(".state-text");
    text.textContent = state;
    text.className = `state-text ${state}`;
    this.$(".spinner").hidden = !Logic.isWaiting(state);
    const playPause = this.$(".play-pause");
    playPause.textContent = state === "paused" ? "Play" : "Pause";
    playPause.disabled = !(state === "paused" || state === "playing");
    const hasDelay = this.takes("delay");
    for (const button of this.root.querySelectorAll(".skip")) button.hidden = !hasDelay;
    this.$(".bar").hidden = !hasDelay;
    const delay = status.delay_s, available = status.available_delay_s;
    this.$(".time-label").textContent = hasDelay ? Logic.formatBehind(delay) : "";
    const programme = Logic.programmeTime(Date.now(), Logic.statsFigure(status, "latency_s"), hasDelay ? delay : 0);
    this.$(".programme-time").textContent = programme ? `programme ${programme.toLocaleTimeString()}` : "";
    if (hasDelay && !this.dragging) this.placeHandle(Logic.handleFraction(delay, available));
    this.$(".bar-oldest").textContent = available > 0 ? `${available.toFixed(1)} s held` : "";
    for (const input of this.root.querySelectorAll(".command")) {
      const figure = input.dataset.figure;
      const value = status[figure];
      input.querySelector(".value").textContent = value === null || value === undefined ? "–" : Logic.formatFigure(figure, value);
    }
  }

  // The alarms raised now, as /alarms lists them: each its kind and stream.
  showAlarms(alarms) {
    const box = this.$(".alarms");
    box.textContent = alarms.map((alarm) => Logic.alarmLabel(alarm)).join(", ");
    box.hidden = alarms.length === 0;
  }

  drawCommands() {
    const box = this.$(".commands");
    box.textContent = "";
    for (const command of commands) {
      if (command.name === "delay" || !command.pipelines.includes(this.name)) continue;
      const figure = command.figures[0];
      const element = document.createElement("div");
      element.className = "command";
      element.dataset.command = command.name;
      element.dataset.figure = figure;
      element.title = command.summary;
      element.innerHTML = `<strong></strong> <span class="value">–</span>
        <button type="button" data-step="-1">−</button><button type="button" data-step="1">+</button>
        <input type="number" step="any"><button type="button" class="set">Set</button>`;
      element.querySelector("strong").textContent = command.name;
      const input = element.querySelector("input");
      input.min = command.min;
      input.max = command.max;
      for (const button of element.querySelectorAll("[data-step]")) {
        button.addEventListener("click", () => this.command(command.name, { step: Number(button.dataset.step) }));
      }
      element.querySelector(".set").addEventListener("click", () => {
        if (input.value !== "") this.command(command.name, { [command.field]: Number(input.value) });
      });
      box.appendChild(element);
    }
  }

  async command(name, body) {
    const reply = await apiJSON(`/${name}?${this.query}`, { method: "POST", headers: { "Content-Type": "application/json" },
                                                            body: JSON.stringify(body) });
    if (reply.ok) this.show(reply.body); else this.refused(reply.body.error || `${name}: ${reply.status}`);
  }

  // What the API said no to, beside the controls, until the next thing is done.
  refused(message) {
    this.$(".refusal").textContent = message;
    clearTimeout(this.refusalTimer);
    this.refusalTimer = setTimeout(() => { this.$(".refusal").textContent = ""; }, 8000);
  }

  async playPause() {
    const path = this.status && this.status.state === "paused" ? "resume" : "pause";
    const reply = await apiJSON(`/${path}?${this.query}`, { method: "POST" });
    if (reply.ok) this.show(reply.body); else this.refused(reply.body.error || `${path}: ${reply.status}`);
  }

  placeHandle(fraction) {
    this.$(".bar-handle").style.left = `${fraction * 100}%`;
    this.$(".bar-played").style.width = `${fraction * 100}%`;
  }

  wireBar() {
    const track = this.$(".bar-track");
    const fractionOf = (event) => {
      const box = track.getBoundingClientRect();
      return box.width > 0 ? (event.clientX - box.left) / box.width : 1;
    };
    track.addEventListener("pointerdown", (event) => {
      this.dragging = true;
      track.setPointerCapture(event.pointerId);
      this.placeHandle(Math.min(1, Math.max(0, fractionOf(event))));
    });
    track.addEventListener("pointermove", (event) => {
      if (this.dragging) this.placeHandle(Math.min(1, Math.max(0, fractionOf(event))));
    });
    const release = async (event) => {
      if (!this.dragging) return;
      this.dragging = false;
      const available = this.status ? this.status.available_delay_s : 0;
      const asked = Logic.delayAt(fractionOf(event), available);
      track.dataset.asked = asked;
      await this.command("delay", { seconds: asked });
    };
    track.addEventListener("pointerup", release);
    track.addEventListener("pointercancel", () => { this.dragging = false; });
  }

  // The latest figures of each stage and stream, as /events brings them.
  addSample(event) {
    const key = event.stream ? `${event.stage} ${event.stream}` : event.stage;
    const figures = Object.entries(event).filter(([name, value]) =>
      typeof value === "number" && !["ts", "event", "pipeline", "stage", "stream"].includes(name));
    this.figures.set(key, figures);
    const body = this.$(".numbers tbody");
    body.textContent = "";
    for (const [name, list] of this.figures) {
      const row = body.insertRow();
      const head = document.createElement("th");
      head.textContent = name;
      row.appendChild(head);
      const cell = row.insertCell();
      for (const [figure, value] of list) {
        const item = document.createElement("span");
        item.dataset.figure = figure;
        item.textContent = `${figure.replace(/_[a-z]+$/, "").replace(/_/g, " ")} ${Logic.formatFigure(figure, value)}`;
        cell.appendChild(item);
      }
    }
    this.refreshPlot();
  }

  // The same picture as --stats-plot, of the last five minutes, at most once a second.
  async refreshPlot() {
    const now = Date.now();
    if (now < this.plotDue) return;
    this.plotDue = now + 1000;
    const response = await api(`/plot.svg?${this.query}&last=300`);
    if (!response.ok) return;
    const svg = new DOMParser().parseFromString(await response.text(), "image/svg+xml").documentElement;
    this.$(".plot").replaceChildren(document.importNode(svg, true));
  }

  // castline graph's picture of what runs now.
  async drawGraph() {
    const response = await api(`/graph.svg?${this.query}`);
    const box = this.$(".graph");
    if (!response.ok) {
      box.textContent = (await response.json().catch(() => ({}))).error || `no picture (${response.status})`;
      return;
    }
    const svg = new DOMParser().parseFromString(await response.text(), "image/svg+xml").documentElement;
    box.replaceChildren(document.importNode(svg, true));
  }

  async loadFile() {
    const response = await api(`/pipeline?${this.query}`);
    this.$(".file").value = await response.text();
    this.showLines([]);
    this.$(".apply-result").textContent = "";
  }

  async apply() {
    const result = this.$(".apply-result");
    result.className = "apply-result";
    result.textContent = "applying…";
    const reply = await apiJSON(`/swap?${this.query}`, { method: "POST", headers: { "Content-Type": "application/yaml" },
                                                         body: this.$(".file").value });
    if (reply.ok) {
      result.classList.add("ok");
      result.textContent = "applied";
      this.showLines([]);
      return;
    }
    result.classList.add("refused");
    result.textContent = reply.body.error || `refused (${reply.status})`;
    this.showLines((reply.body.errors || []).map(Logic.parseErrorLine).filter(Boolean));
  }

  showLines(errors) { FileEditor.showLines(this.root, errors); }

  placeErrors() { FileEditor.placeErrors(this.root); }
}

// ---- Keeping every view in step: /status each second, /events as they come ----

async function refreshStatus() {
  const reply = await apiJSON("/status");
  if (!reply.ok) throw new Error(reply.body.error || `status ${reply.status}`);
  const raised = await apiJSON("/alarms");
  const alarms = raised.ok ? raised.body.alarms || [] : [];
  const list = reply.body.pipelines || [reply.body];
  for (const status of list) {
    let view = views.get(status.pipeline);
    if (!view) {
      view = new PipelineView(status.pipeline);
      views.set(status.pipeline, view);
      view.drawCommands();
    }
    view.show(status);
    view.showAlarms(alarms.filter((alarm) => alarm.pipeline === status.pipeline));
  }
}

async function loadCommands() {
  const reply = await apiJSON("/commands");
  if (reply.ok) commands = reply.body.commands || [];
  for (const view of views.values()) view.drawCommands();
}

async function pollStatus() {
  for (;;) {
    try {
      if (tokenWanted) await tokenWanted;
      await refreshStatus();
      setConnection("connected");
    } catch (error) {
      setConnection(`castline is not answering (${error.message})`, true);
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

async function followEvents() {
  for (;;) {
    try {
      if (tokenWanted) await tokenWanted;
      const response = await api("/events");
      const reader = response.body.getReader();
      const decoder = new TextDecoder();
      let pending = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pending += decoder.decode(value, { stream: true });
        const blocks = pending.split("\n\n");
        pending = blocks.pop();
        for (const block of blocks) handleEvent(Logic.parseEventBlock(block));
      }
    } catch (error) {
      // Reconnects below; the status poll says what is wrong.
    }
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

function pick(object, names) {
  return Object.fromEntries(names.filter((n) => typeof object[n] === "number").map((n) => [n, object[n]]));
}

function handleEvent(event) {
  if (!event) return;
  const view = views.get(event.pipeline);
  if (!view) return;
  if (event.event === "stats") view.addSample(event);
  // A delay's figures move the bar and the time label as they come, not a poll later.
  if (view.status && (typeof event.delay_s === "number" || typeof event.available_delay_s === "number")) {
    view.show(Object.assign({}, view.status, pick(event, ["delay_s", "available_delay_s"])));
  }
  if (["state", "reloaded", "alarm-raised", "alarm-cleared"].includes(event.event)) refreshStatus().catch(() => {});
  if (event.event === "reloaded") {
    loadCommands().catch(() => {});
    if (view.root.querySelector("details").open) view.drawGraph().catch(() => {});
  }
}

async function start() {
  for (;;) {
    try {
      if (tokenWanted) await tokenWanted;
      await refreshStatus();
      await loadCommands();
      break;
    } catch (error) {
      setConnection(`castline is not answering (${error.message})`, true);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
  pollStatus();
  followEvents();
}

start();
