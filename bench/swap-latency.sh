#!/usr/bin/env bash
# Benchmark: how long a swap by file takes, from the rename to new media at the sink.
#
# `castline run live.yaml --watch --stats-json` publishes a 720p30 test signal
# (x264 + AAC) over RTMP to a local ingest (`castline ingest`). SWAPS times, 1.5 s
# apart, a new version of the file is written beside it and renamed over it (as
# editors save), alternating the source between two test patterns: each swap
# replaces the source and the encoders and keeps the RTMP publish. Per swap:
#
#   rename → media   the `reloaded` event's time minus the rename's time. castline
#                    sends `reloaded` once the first buffer of the new parts reached
#                    the kept sink (the watcher, loading, checking, building and
#                    the swap itself all included)
#   swap itself      the event's took_s: from the swap's start (file loaded and
#                    checked) to that first buffer
#
# Peer, in the same run: what the alternative costs, restarting a gst-launch-1.0
# pipeline with the new source (videotestsrc ! x264enc ! fakesink, no RTMP
# connection even): from spawning it to its first encoded buffer, PEER_RUNS times.
#
# Target (issue): median rename → media under 200 ms over 20 swaps, with min and max.
# Benchmarks report; exit 0 either way (non-zero only if it cannot run).
#
# Environment:
#   CASTLINE   castline binary (default .build/release/castline, what `make bench` builds)
#   SWAPS      swaps (default 20)
#   PEER_RUNS  gst-launch restarts (default 5)
#   BENCH_OUT  directory for logs (default: a new temp dir, kept)
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
swaps=${SWAPS:-20}
peer_runs=${PEER_RUNS:-5}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-swap-bench.XXXXXX)}
mkdir -p "$out"

die() { echo "swap-latency: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ $swaps =~ ^[1-9][0-9]*$ ]] || die "SWAPS must be a positive integer"
for tool in gst-launch-1.0 python3; do command -v "$tool" >/dev/null || die "$tool is missing"; done

source "$here/lib/ingest.bash"
castline_pid=
stop_castline() {
    [[ -n $castline_pid ]] && kill -INT "$castline_pid" 2>/dev/null && wait "$castline_pid" 2>/dev/null || true
    castline_pid=
}
trap 'stop_castline; cleanup' EXIT
trap 'exit 130' INT TERM
start_ingest

key=swapbench$RANDOM
export CASTLINE_BENCH_KEY=$key
pipeline=$out/live.yaml
write_pipeline() {  # $1: pattern, $2: file
    cat >"$2" <<EOF
version: 1
name: swap-bench
source: { test: { video: { pattern: $1 }, audio: {} } }
stages: [ { encode: { video: {}, audio: {} } } ]
sinks: [ { rtmp: { url: "$rtmp_base", key: "\${CASTLINE_BENCH_KEY}" } } ]
EOF
}
write_pipeline smpte-rp-219 "$pipeline"
events=$out/events.jsonl
"$castline" run "$pipeline" --watch --stats-json "$events" 2>"$out/castline.err" &
castline_pid=$!
for _ in $(seq 100); do
    grep -q '"to":"playing"' "$events" 2>/dev/null && break
    kill -0 "$castline_pid" 2>/dev/null || { cat "$out/castline.err" >&2; die "castline exited"; }
    sleep 0.1
done
grep -q '"to":"playing"' "$events" || die "castline did not start playing in 10 s"
sleep 2

echo "castline swap benchmark: $swaps swaps of the source (test pattern ↔ test pattern) under an RTMP publish"
: >"$out/renames.txt"
for i in $(seq "$swaps"); do
    sleep 1.5
    if ((i % 2)); then pattern=ball; else pattern=smpte-rp-219; fi
    write_pipeline "$pattern" "$pipeline.new"
    date +%s.%N >>"$out/renames.txt"
    mv "$pipeline.new" "$pipeline"
    for _ in $(seq 100); do
        (($(grep -c '"event":"reloaded"' "$events" || true) >= i)) && break
        sleep 0.1
    done
    (($(grep -c '"event":"reloaded"' "$events" || true) >= i)) || die "swap $i was not reported in 10 s (see $out/castline.err)"
done
stop_castline
grep -q '"event":"failure"' "$events" && echo "  (castline reported a failure: see $events)"

# The peer: restarting gst-launch with the new source, to its first encoded buffer.
: >"$out/peer.txt"
for _ in $(seq "$peer_runs"); do
    python3 - >>"$out/peer.txt" <<'EOF'
import subprocess, time
start = time.monotonic()
process = subprocess.Popen(
    ["gst-launch-1.0", "-v", "videotestsrc", "is-live=true", "pattern=ball", "!",
     "video/x-raw,width=1280,height=720,framerate=30/1", "!",
     "x264enc", "tune=zerolatency", "speed-preset=veryfast", "bitrate=2500", "!",
     "fakesink", "silent=false"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
for line in process.stdout:
    if "last-message = chain" in line:
        print(f"{(time.monotonic() - start) * 1000:.1f}")
        break
process.kill()
process.wait()
EOF
done

python3 - "$events" "$out/renames.txt" "$out/peer.txt" <<'EOF'
import json, statistics, sys
from datetime import datetime
events, renames, peer = sys.argv[1:4]
reloads = [json.loads(line) for line in open(events) if '"event":"reloaded"' in line]
renamed = [float(line) for line in open(renames) if line.strip()]
latency = [(datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp() - t) * 1000 for e, t in zip(reloads, renamed)]
took = [e["took_s"] * 1000 for e in reloads]
restart = [float(line) for line in open(peer) if line.strip()]
def line(name, values):
    print(f"{name:<26} n={len(values):<3} median {statistics.median(values):7.1f} ms   min {min(values):7.1f}   max {max(values):7.1f}")
line("rename → media (castline)", latency)
line("swap itself (castline)", took)
line("restart (gst-launch)", restart)
median = statistics.median(latency)
print(f"castline rename→media / gst-launch restart = {median / statistics.median(restart):.3f} (median)")
print(f"median rename → media {median:.1f} ms; target < 200 ms: {'PASS' if median < 200 else 'MISS'}")
EOF
echo "(logs in $out)"
