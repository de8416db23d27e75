// The control page's own logic, without the page: where the bar's handle sits and what a
// point on it asks for, how figures and errors read. Unit-tested in the browser tests
// through window.CastlinePage.
"use strict";

window.CastlinePage = {
  // The bar spans what is held: oldest held at 0, the live edge at 1. Where the play-out point is.
  handleFraction(delay, available) {
    if (!(available > 0)) return 1;
    return Math.min(1, Math.max(0, 1 - delay / available));
  },
  // The delay a point on the bar asks for, to a tenth of a second.
  delayAt(fraction, available) {
    if (!(available > 0)) return 0;
    const f = Math.min(1, Math.max(0, fraction));
    return Math.round((1 - f) * available * 10) / 10;
  },
  // The programme time heard now: the source's latency (wall clock minus the stream's
  // EXT-X-PROGRAM-DATE-TIME as media leaves it) plus the delay after it, back from now.
  programmeTime(nowMs, latency, delay) {
    if (typeof latency !== "number" || !isFinite(latency)) return null;
    return new Date(nowMs - (latency + (delay || 0)) * 1000);
  },
  // The latest value of `figure` among a status's stats entries, or null.
  statsFigure(status, figure) {
    const entry = (status.stats || []).find((e) => typeof e[figure] === "number");
    return entry ? entry[figure] : null;
  },
  formatBehind(delay) {
    if (delay === null || delay === undefined || !isFinite(delay)) return "";
    if (delay < 0.05) return "live";
    return `${delay.toFixed(1)} s behind live`;
  },
  // A figure as the status line writes it: kbit/s, dBFS, ms and seconds with their units.
  formatFigure(name, value) {
    if (typeof value !== "number" || !isFinite(value)) return String(value);
    if (name.endsWith("_kbps")) return `${value.toFixed(0)} kbit/s`;
    if (name.endsWith("_dbfs")) return `${value.toFixed(1)} dBFS`;
    if (name.endsWith("_ms")) return `${value.toFixed(1)} ms`;
    // Under a second (a segment's fetch) to the millisecond, else to the tenth.
    if (name.endsWith("_s")) return `${value.toFixed(Math.abs(value) < 1 && value !== 0 ? 3 : 1)} s`;
    if (name.endsWith("_db")) return `${value >= 0 ? "+" : ""}${value.toFixed(1)} dB`;
    return Number.isInteger(value) ? String(value) : value.toFixed(2);
  },
  // `ORIGIN:LINE:COL: message` as the API writes a file's errors; null for a line without a place.
  parseErrorLine(text) {
    const match = /^(.*?):(\d+):(\d+): ([\s\S]*)$/.exec(text);
    if (!match) return null;
    return { line: Number(match[2]), column: Number(match[3]), message: match[4] };
  },
  // One server-sent event block's data, or null (comments, keep-alives).
  parseEventBlock(block) {
    const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart());
    if (data.length === 0) return null;
    try { return JSON.parse(data.join("\n")); } catch { return null; }
  },
  // An alarm as the page names it: "ALARM silence (audio)".
  alarmLabel(alarm) {
    return `ALARM ${alarm.kind}${alarm.stream ? ` (${alarm.stream})` : ""}`;
  },
  // States a player shows a spinner for.
  isWaiting(state) { return ["initialising", "connecting", "buffering", "reconnecting", "stopping"].includes(state); },
};
