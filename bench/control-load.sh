#!/usr/bin/env bash
# The control API under load: a tone through a delay and a stats stage (`every: 100ms`)
# plays for DURATION s twice, once left alone and once while GET /status comes at RATE
# requests a second over 8 keep-alive connections (Tests/EndToEndTests/Support/control_abuse.py).
# Prints, for each: the request rate held, status counts, latency p50/p99/max, the largest
# play-out stall (how far the meter's position fell behind the wall clock of its samples,
# worst against best; a buffer is 21 ms), castline's CPU seconds and peak RSS.
#
#   usage: bench/control-load.sh            RATE=1000 DURATION=30 (defaults)
set -euo pipefail
cd "$(dirname "$0")/.."
RATE=${RATE:-1000}
DURATION=${DURATION:-30}
BIN=${CASTLINE_BIN:-${CASTLINE:-.build/release/castline}}
[ -x "$BIN" ] || { echo "build castline first (make release), or set CASTLINE" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/tone.yaml" <<'YAML'
version: 1
name: control-load
source:
  test:
    audio: { tone: 440 }
stages:
  - delay: { initial: 0s, max: 1m }
  - stats: { every: 100ms, name: meter }
sinks:
  - null: {}
YAML

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

run() {  # $1: "idle" or "load"
  local port stats pid
  port=$(free_port)
  stats="$work/$1.jsonl"
  /usr/bin/time -f '%U %S %M' -o "$work/$1.time" "$BIN" run "$work/tone.yaml" --control "127.0.0.1:$port" \
      --stats-json "$stats" --duration "$((DURATION + 3))s" >/dev/null 2>"$work/$1.log" &
  pid=$!
  for _ in $(seq 100); do python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $port), 0.1)" 2>/dev/null && break; sleep 0.1; done
  if [ "$1" = load ]; then
    python3 Tests/EndToEndTests/Support/control_abuse.py "$port" load "$RATE" "$DURATION" > "$work/load.json"
  else
    echo '{}' > "$work/idle.json"
  fi
  wait "$pid"
  python3 - "$1" "$stats" "$work/$1.json" "$work/$1.time" <<'PY'
import datetime, json, sys
name, stats, load, times = sys.argv[1:]
points = []
for line in open(stats):
    e = json.loads(line)
    if e.get("event") == "stats" and e.get("stage") == "meter" and "position_s" in e:
        wall = datetime.datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
        points.append((wall, e["position_s"]))
lags = [(w - points[0][0]) - (p - points[0][1]) for w, p in points]
user, system, rss = open(times).read().split()[-3:]
r = json.load(open(load))
held = f"{r['requests']} requests, {r['rate']:.0f}/s, statuses {r['statuses']}, errors {r['errors']}, " \
       f"latency p50 {r['p50_ms']:.1f} ms p99 {r['p99_ms']:.1f} ms max {r['max_ms']:.1f} ms" if r else "no requests"
print(f"{name:5} {held}")
print(f"{name:5} play-out: {len(points)} samples, largest stall {1000 * (max(lags) - min(lags)):.0f} ms; "
      f"castline CPU {float(user) + float(system):.2f} s, peak RSS {int(rss) / 1024:.0f} MB")
PY
}

echo "control API load: RATE=$RATE/s for DURATION=$DURATION s, $BIN"
run idle
run load
