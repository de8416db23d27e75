#!/usr/bin/env bash
# Benchmark: LISTENERS audio-only listeners of one live HLS stream in one castline process.
#
# One local ingest (`castline ingest`, nginx serving HLS) with ffmpeg publishing a
# 1 kHz AAC tone; castline runs LISTENERS pipeline files side by side
# (`castline run f1.yaml ... fN.yaml`), each an `hls` source, a stats stage and a
# clocked null sink, for DURATION seconds of media. Each listener's pace is read from
# its stats (the stream's own position against the wall clock, from its first sample
# after WARMUP s to its last): a listener that fell behind real time drifts. Also the
# process's CPU (user+sys) and peak RSS, per listener.
#
# Target (issue): 50 listeners on this 2-core machine, each within 50 ms of real time.
# Reports, does not assert.
#
# Environment: CASTLINE (default .build/release/castline, what `make bench` builds), LISTENERS (default 50),
# DURATION (default 40), WARMUP (default 10), BENCH_OUT (default a new temp dir).
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
listeners=${LISTENERS:-50}
duration=${DURATION:-40}
warmup=${WARMUP:-10}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-bench.XXXXXX)}
mkdir -p "$out"
die() { echo "listen-many: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ $listeners =~ ^[1-9][0-9]*$ ]] || die "LISTENERS must be a positive integer"
[[ $duration =~ ^[0-9]+$ && $duration -gt $((warmup + 5)) ]] || die "DURATION must be whole seconds, over WARMUP + 5"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"

source "$here/lib/ingest.bash"
start_ingest
ffmpeg -nostdin -v error -re -f lavfi -i sine=frequency=1000:sample_rate=48000 -c:a aac -b:a 128k \
    -f flv "$rtmp_base/many" >"$out/ffmpeg.log" 2>&1 &
publisher=$!
trap 'kill "$publisher" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 60); do
    (( $(curl -fs "$hls_base/many.m3u8" 2>/dev/null | grep -c EXTINF) >= 4 )) && break
    sleep 0.5
done

files=()
for ((i = 1; i <= listeners; i++)); do
    file=$out/listener-$i.yaml
    cat >"$file" <<EOF
version: 1
name: listener-$i
source:
  hls: { url: "$hls_base/many.m3u8" }
stages:
  - stats: { every: 1s }
sinks:
  - null: {}
EOF
    files+=("$file")
done

echo "listen-many: $listeners listeners of one live stream for $duration s, one process; logs in $out"
/usr/bin/time -f '%U %S %M' -o "$out/time.txt" \
    "$castline" run "${files[@]}" --duration "${duration}s" --stats-json "$out/stats.jsonl" \
    >/dev/null 2>"$out/castline.err" || echo "castline exited $? (see $out/castline.err)"

python3 - "$out/stats.jsonl" "$out/time.txt" "$listeners" "$warmup" <<'PY'
import json, sys
from datetime import datetime
path, timing, listeners, warmup = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
samples = {}
for line in open(path):
    event = json.loads(line)
    if event.get("event") != "stats" or event.get("stream") != "audio" or "position_s" not in event:
        continue
    when = datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()
    samples.setdefault(event["pipeline"], []).append((when, event["position_s"]))
drifts = {}
for name, points in samples.items():
    start = points[0][0] + warmup
    kept = [p for p in points if p[0] >= start]
    if len(kept) >= 2:
        (t0, p0), (t1, p1) = kept[0], kept[-1]
        drifts[name] = ((p1 - p0) - (t1 - t0)) * 1000
user, system, rss = open(timing).read().split()
cpu = float(user) + float(system)
worst = max((abs(d) for d in drifts.values()), default=float("nan"))
print(f"listeners measured: {len(drifts)} of {listeners}")
print(f"drift against real time (ms): worst {worst:.1f}; " +
      ", ".join(f"{d:+.0f}" for d in sorted(drifts.values())[:5]) + (" ..." if len(drifts) > 5 else ""))
print(f"process CPU {cpu:.1f} s ({cpu / listeners:.3f} s per listener); peak RSS {int(rss) / 1024:.0f} MB "
      f"({int(rss) / 1024 / listeners:.1f} MB per listener)")
print(f"target: every listener within 50 ms of real time: {'PASS' if len(drifts) == listeners and worst <= 50 else 'MISS'}")
PY
