#!/usr/bin/env bash
# Benchmark: what watching streams for trouble costs (issue #32).
#
# One HLS audio stream (AAC 128k 48 kHz stereo, 2 s segments) is made once with ffmpeg and
# served over HTTP on loopback. Then:
#
#   1. Side by side, ROUNDS times (all at once, so all see the same machine):
#        castline  castline monitor URL --audio-only           (silence, loudness, true peak)
#        ffmpeg    ffmpeg -re -i URL -af silencedetect,ebur128=peak=true -f null -
#      and, beside them, decoding alone (no meter): GStreamer's own HLS client and AAC decoder
#      (gst-launch-1.0 … hlsdemux ! tsdemux ! aacparse ! avdec_aac … fakesink sync=true) and
#      `ffmpeg -re -i URL -f null -`: the floor a GStreamer monitor starts from;
#      each under /usr/bin/time: user+sys CPU seconds, peak RSS.
#   2. STREAMS copies of the stream in one `castline monitor --audio-only` process: CPU and
#      RSS per stream, and how far each stream fell behind real time: the most, over streams,
#      that a stats sample's media position trails the wall clock since that stream's first
#      sample (its own pace).
#
# Targets (issue #32): castline/ffmpeg CPU <= 0.80; at least 100 streams on 2 cores, each
# within 50 ms of real time. Benchmarks report, they do not assert: exit 0 either way.
#
# Environment:
#   CASTLINE   castline binary (default .build/release/castline, what `make bench` builds)
#   DURATION   seconds of stream (default 30)
#   ROUNDS     side-by-side rounds (default 2)
#   STREAMS    streams in the many-streams run (default 100)
#   BENCH_OUT  directory for logs (default: a new temp dir, kept)
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
duration=${DURATION:-30}
rounds=${ROUNDS:-2}
streams=${STREAMS:-100}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-monitor-bench.XXXXXX)}
mkdir -p "$out"

die() { echo "monitor-cpu: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ $duration =~ ^[0-9]+$ && $duration -ge 10 ]] || die "DURATION must be whole seconds >= 10"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
[[ $streams =~ ^[1-9][0-9]*$ ]] || die "STREAMS must be a positive integer"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"
for tool in ffmpeg gst-launch-1.0 python3 curl; do command -v "$tool" >/dev/null || die "$tool is missing"; done
gst-inspect-1.0 hlsdemux >/dev/null 2>&1 && gst-inspect-1.0 avdec_aac >/dev/null 2>&1 ||
    die "GStreamer's hlsdemux or avdec_aac is missing (gstreamer1.0-plugins-bad, gstreamer1.0-libav)"

media=$out/media
mkdir -p "$media"
echo "making ${duration} s of HLS audio..."
ffmpeg -nostdin -v error -y -f lavfi -i "sine=frequency=1000:sample_rate=48000" -t "$duration" \
    -c:a aac -b:a 128k -ar 48000 -ac 2 \
    -f hls -hls_time 2 -hls_playlist_type vod -hls_segment_filename "$media/seg-%03d.ts" "$media/stream.m3u8" ||
    die "ffmpeg could not make the stream"

serve_folder "$media" "$out/http.log" stream.m3u8
url=$served/stream.m3u8

# The last line: /usr/bin/time puts "Command exited with non-zero status N" before it when a tool fails.
cpu_of() { tail -n1 "$1" | awk '{printf "%.2f", $1 + $2}'; }
rss_of() { tail -n1 "$1" | awk '{printf "%d", $3 / 1024}'; }

echo "castline monitor benchmark: ${duration} s of HLS audio, $rounds side-by-side round(s), $streams streams; logs: $out"
# Beside the two, what decoding alone costs: GStreamer's own HLS client and AAC decoder into a
# clock-synced fakesink (no meter: the floor any GStreamer monitor starts from), and ffmpeg's.
median_of() { sort -n | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}'; }
ratio_of() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}'; }
ratios=() floor_ratios=() like_ratios=()
for ((r = 1; r <= rounds; r++)); do
    /usr/bin/time -f '%U %S %M %e' -o "$out/r$r-castline.time" "$castline" monitor "$url" --audio-only \
        >"$out/r$r-castline.log" 2>&1 &
    castline_pid=$!
    /usr/bin/time -f '%U %S %M %e' -o "$out/r$r-ffmpeg.time" ffmpeg -nostdin -v error -re -i "$url" \
        -af silencedetect,ebur128=peak=true -f null - >"$out/r$r-ffmpeg.log" 2>&1 &
    ffmpeg_pid=$!
    /usr/bin/time -f '%U %S %M %e' -o "$out/r$r-gst.time" gst-launch-1.0 -q souphttpsrc location="$url" ! hlsdemux \
        ! tsdemux ! aacparse ! avdec_aac ! audioconvert ! audio/x-raw,format=F32LE ! fakesink sync=true \
        >"$out/r$r-gst.log" 2>&1 &
    gst_pid=$!
    /usr/bin/time -f '%U %S %M %e' -o "$out/r$r-decode.time" ffmpeg -nostdin -v error -re -i "$url" -f null - \
        >"$out/r$r-decode.log" 2>&1 &
    decode_pid=$!
    wait "$castline_pid" || echo "castline exited $?" >>"$out/r$r-castline.log"
    wait "$ffmpeg_pid" || echo "ffmpeg exited $?" >>"$out/r$r-ffmpeg.log"
    wait "$gst_pid" || echo "gst-launch exited $?" >>"$out/r$r-gst.log"
    wait "$decode_pid" || echo "ffmpeg (decoding only) exited $?" >>"$out/r$r-decode.log"
    c=$(cpu_of "$out/r$r-castline.time") f=$(cpu_of "$out/r$r-ffmpeg.time")
    g=$(cpu_of "$out/r$r-gst.time") d=$(cpu_of "$out/r$r-decode.time")
    ratios+=("$(ratio_of "$c" "$f")") floor_ratios+=("$(ratio_of "$g" "$f")") like_ratios+=("$(ratio_of "$g" "$d")")
    printf '  round %d  castline %5.2f CPU-s %4d MB   ffmpeg %5.2f CPU-s %4d MB   castline/ffmpeg %s\n' "$r" "$c" \
        "$(rss_of "$out/r$r-castline.time")" "$f" "$(rss_of "$out/r$r-ffmpeg.time")" "${ratios[-1]}"
    printf '           decoding only: gst-launch %5.2f CPU-s, ffmpeg %5.2f CPU-s\n' "$g" "$d"
done
median=$(printf '%s\n' "${ratios[@]}" | median_of)
verdict=$(awk -v m="$median" 'BEGIN {print m <= 0.8 ? "PASS" : "MISS"}')
echo "castline monitor --audio-only / ffmpeg silencedetect+ebur128 (CPU, median of $rounds) = $median; target <= 0.80: $verdict"
echo "gst-launch decoding only / ffmpeg silencedetect+ebur128 = $(printf '%s\n' "${floor_ratios[@]}" | median_of) [the GStreamer floor, no meter]"
echo "gst-launch decoding only / ffmpeg decoding only = $(printf '%s\n' "${like_ratios[@]}" | median_of) [like for like]"

urls=()
for ((i = 0; i < streams; i++)); do urls+=("$url"); done
echo "$streams streams in one castline monitor..."
/usr/bin/time -f '%U %S %M %e' -o "$out/many.time" "$castline" monitor "${urls[@]}" --audio-only --stats-json "$out/many.jsonl" \
    >"$out/many.log" 2>&1 || echo "castline exited $?" >>"$out/many.log"
python3 - "$out/many.jsonl" "$out/many.time" "$streams" "$duration" <<'PY'
import json, sys
from datetime import datetime
path, timing, streams, duration = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
first, behind, started = {}, {}, set()
for line in open(path):
    event = json.loads(line)
    if event.get("event") != "stats" or event.get("stream") != "audio" or "position_s" not in event:
        continue
    name, wall = event["pipeline"], datetime.fromisoformat(event["ts"].replace("Z", "+00:00")).timestamp()
    started.add(name)
    if name not in first:
        first[name] = (wall, event["position_s"])
        continue
    wall0, pos0 = first[name]
    behind[name] = max(behind.get(name, 0.0), (wall - wall0) - (event["position_s"] - pos0))
user, system, rss, wall = open(timing).read().split()[-4:]
cpu = float(user) + float(system)
worst = max(behind.values()) if behind else float("nan")
print(f"  {len(started)} of {streams} streams played; CPU {cpu:.2f} s in {float(wall):.1f} s wall: {cpu / streams:.3f} CPU-s "
      f"and {int(rss) / 1024 / streams:.1f} MB RSS per stream ({int(rss) / 1024:.0f} MB in all)")
print(f"  the stream furthest behind real time trailed it by {worst * 1000:.0f} ms; target each within 50 ms, "
      f"at least 100 streams: {'PASS' if len(started) >= 100 and len(started) == streams and worst <= 0.05 else 'MISS'}")
PY
