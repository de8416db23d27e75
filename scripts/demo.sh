#!/usr/bin/env bash
# `make demo`: the main job on this machine alone. Starts a local RTMP/RTMPS
# ingest, broadcasts the test signal to it over RTMPS for 30 s, listens to it 5 s
# behind live reading the signal's clock back (latency and A/V offset, and a
# stats plot of them over time in out/demo-latency.svg), shows what the ingest made
# of it as HLS, and stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."
castline=${CASTLINE:-.build/debug/castline}
seconds=${DEMO_SECONDS:-30}
work=$(mktemp -d)
"$castline" ingest > "$work/ingest.txt" 2> "$work/ingest.log" &
ingest=$!
trap 'kill -INT $ingest 2>/dev/null || true; wait $ingest 2>/dev/null || true; rm -rf "$work"' EXIT

for _ in $(seq 1 100); do
  grep -q '^hls playback' "$work/ingest.txt" 2>/dev/null && break
  kill -0 $ingest 2>/dev/null || { cat "$work/ingest.log" >&2; exit 1; }
  sleep 0.1
done
rtmps=$(awk '/^rtmps publish/ {print $3}' "$work/ingest.txt"); rtmps=${rtmps%/<key>}
ca=$(sed -n 's/.*--ca-file \([^)]*\)).*/\1/p' "$work/ingest.txt")
hls=$(awk '/^hls playback/ {print $3}' "$work/ingest.txt")
export CASTLINE_DEMO_KEY="demo-$RANDOM$RANDOM"
playlist=${hls/<key>/$CASTLINE_DEMO_KEY}

echo "== local ingest: $rtmps (RTMPS, CA $ca)"
echo "== broadcasting the test signal for ${seconds}s: 720p30 H.264 + AAC, beep and flash every second"
"$castline" broadcast "$rtmps" --key-env CASTLINE_DEMO_KEY --ca-file "$ca" --duration "${seconds}s" 2> "$work/broadcast.log" &
broadcast=$!
for _ in $(seq 1 200); do
  [ "$(curl -s "$playlist" | grep -c '\.ts$' || true)" -ge 3 ] && break
  sleep 0.1
done
mkdir -p out
echo "== listening 5 s behind live, reading the test signal's clock: latency behind the broadcaster, A/V offset"
"$castline" listen "$playlist" --delay 5s --measure-latency --output null --end-after 8s \
  --stats-plot out/demo-latency.svg --stats-json "$work/listen.jsonl" 2>&1 | grep -v '^\s*$' | tail -8
grep -o '"latency_[a-z]*_s":[0-9.]*\|"av_offset_ms":[-0-9.]*' "$work/listen.jsonl" | tail -3 | sed 's/^/   last: /'
echo "   plot: out/demo-latency.svg (delay, available delay and latency over time)"
wait $broadcast
tail -3 "$work/broadcast.log"

echo "== the ingest served it as HLS: $playlist"
segments=$(curl -s "$playlist" | grep -c '\.ts$' || true)
echo "   $segments segments; the first one, as ffprobe reads it:"
first=$(curl -s "$playlist" | grep '\.ts$' | head -1)
ffprobe -v error -show_entries stream=codec_name,profile,width,height,pix_fmt,avg_frame_rate,sample_rate,channels \
  -of compact=p=0 "${playlist%/*}/$first" | awk 'NF && !seen[$0]++ {print "   " $0}'
