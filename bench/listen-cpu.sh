#!/usr/bin/env bash
# Benchmark: what listening to a 720p HLS stream costs, audio only and with video.
#
# One 720p30 HLS stream (H.264 2500k + AAC 128k 48 kHz stereo, 2 s segments,
# audio and video muxed in TS, as nginx-rtmp and most live ingests serve it) is
# made once with ffmpeg and served over HTTP on loopback. Then, one after another
# (never at once), ROUNDS times with the order rotating:
#
#   castline-audio  castline listen URL --audio-only --output null
#   castline-video  castline listen URL --output null          (video decoded too)
#   ffmpeg-vn       ffmpeg -re -i URL -vn -f null -            (audio decoded, video dropped)
#   gst-audio       gst-launch-1.0 uridecodebin3 ... audio decoded, video parsed and
#                   dropped: the raw GStreamer chain castline builds on (diagnostic)
#
# each under /usr/bin/time: user+sys CPU seconds, peak RSS. All of them play at the
# stream's own pace (castline and gst-launch by the clock, ffmpeg by -re). The
# three audio-only commands also run for SHORT seconds (castline --duration, ffmpeg -t,
# gst-launch stopped by SIGINT): the
# difference splits each one's cost into start-up and cost per second of stream.
#
# Time to first audio, in runs of their own (FIRST_RUNS per round, interleaved):
# from starting the process to the first decoded audio. castline: its "playing"
# line on stderr (decoded audio has reached the output and it plays; its
# stream-started event comes earlier, when the first media leaves the source,
# before it is decoded). ffmpeg: the first byte of decoded PCM on a pipe (ffmpeg -i URL -vn -f s16le
# -flush_packets 1 -), read by a timer. The same for gst-launch-1.0 playbin3 into
# an fdsink, as the raw-GStreamer reference (diagnostic).
#
# Targets (issue #35): castline-audio/castline-video <= 0.5, castline-audio/ffmpeg-vn
# <= 0.80 (CPU seconds), castline/ffmpeg time to first audio <= 0.80. Benchmarks
# report, they do not assert: exit 0 either way (non-zero only if it cannot run).
#
# Environment:
#   CASTLINE   castline binary (default .build/release/castline, what `make bench` builds)
#   DURATION   seconds of stream (default 20)
#   SHORT      seconds of the short runs (default 4)
#   ROUNDS     rounds (default 2)
#   FIRST_RUNS time-to-first-audio runs per tool and round (default 5)
#   BENCH_OUT  directory for logs and results.tsv (default: a new temp dir, kept)
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
duration=${DURATION:-20}
rounds=${ROUNDS:-2}
short=${SHORT:-4}
first_runs=${FIRST_RUNS:-5}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-listen-bench.XXXXXX)}
mkdir -p "$out"

die() { echo "listen-cpu: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ $duration =~ ^[0-9]+$ && $duration -ge 6 ]] || die "DURATION must be whole seconds >= 6"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
[[ $short =~ ^[0-9]+$ && $short -ge 2 && $short -lt $duration ]] || die "SHORT must be whole seconds, at least 2 and under DURATION"
[[ $first_runs =~ ^[1-9][0-9]*$ ]] || die "FIRST_RUNS must be a positive integer"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"
for tool in ffmpeg python3 curl; do command -v "$tool" >/dev/null || die "$tool is missing"; done

# ---- the stream --------------------------------------------------------------
media=$out/media
mkdir -p "$media"
echo "making ${duration} s of 720p30 HLS..."
ffmpeg -nostdin -v error -y -f lavfi -i "testsrc2=size=1280x720:rate=30" \
    -f lavfi -i "sine=frequency=1000:sample_rate=48000" -t "$duration" \
    -c:v libx264 -preset veryfast -b:v 2500k -maxrate 2500k -bufsize 5000k -g 60 -pix_fmt yuv420p \
    -c:a aac -b:a 128k -ar 48000 -ac 2 \
    -f hls -hls_time 2 -hls_playlist_type vod -hls_segment_filename "$media/seg-%03d.ts" "$media/stream.m3u8" ||
    die "ffmpeg could not make the stream"

serve_folder "$media" "$out/http.log" stream.m3u8
url=$served/stream.m3u8

# Seconds from starting a command to the first byte on its stdout, or, when $1 is not
# empty, to the line $1 on its stderr; the command is then stopped. The reader starts the
# command itself and takes the time just before, so its own start-up (a pyenv shim of
# python3 takes 120 ms here) is not counted for either tool.
time_to_first() {
    local wanted=$1
    shift
    python3 - "$wanted" "$@" 2>>"$out/first-audio.log" <<'PY' || true
import subprocess, sys, time
wanted, command = sys.argv[1].encode(), sys.argv[2:]
start = time.monotonic()
if wanted:
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    seen = any(line.strip() == wanted for line in child.stderr)
else:
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=sys.stderr)
    seen = len(child.stdout.read(1)) == 1
if seen:
    print(f"{time.monotonic() - start:.3f}", flush=True)
child.kill()
child.wait()
PY
}

first_audio() {  # tool -> prints seconds to its first decoded audio
    case $1 in
        castline-first)
            # "playing" is said on stderr once decoded audio has reached the output and it plays (no
            # --stats-json: its stats stage would change the pipeline).
            time_to_first playing "$castline" listen "$url" --audio-only --output null --duration 2s ;;
        ffmpeg-first)
            time_to_first '' ffmpeg -nostdin -v error -i "$url" -vn -f s16le -flush_packets 1 - ;;
        gst-first)
            time_to_first '' timeout 10 gst-launch-1.0 -q playbin3 uri="$url" video-sink=fakesink \
                audio-sink="fdsink fd=1 sync=false" ;;
    esac
}

run() {  # tool run -> writes $out/$run.time
    local tool=$1 run=$2
    local timer=(/usr/bin/time -f '%U %S %M %e' -o "$out/$run.time")
    case $tool in
        castline-audio)
            "${timer[@]}" "$castline" listen "$url" --audio-only --output null >"$out/$run.log" 2>&1 ||
                echo "exit $?" >>"$out/$run.log" ;;
        castline-audio-short)
            "${timer[@]}" "$castline" listen "$url" --audio-only --output null --duration "${short}s" \
                >"$out/$run.log" 2>&1 || echo "exit $?" >>"$out/$run.log" ;;
        castline-video)
            "${timer[@]}" "$castline" listen "$url" --output null >"$out/$run.log" 2>&1 || echo "exit $?" >>"$out/$run.log" ;;
        gst-audio|gst-audio-short)
            # Raw GStreamer doing what castline-audio does: uridecodebin3 (hlsdemux2),
            # audio decoded to a clocked fakesink, video parsed and dropped. SIGINT
            # stops the short run (with -e, hlsdemux2 would play on to the end).
            local limit=()
            [[ $tool == gst-audio-short ]] && limit=(timeout -s INT "$short")
            "${timer[@]}" "${limit[@]}" gst-launch-1.0 -q uridecodebin3 uri="$url" caps="audio/x-raw(ANY);video/x-h264" name=d \
                d.audio_0 ! queue ! audioconvert ! audioresample ! fakesink sync=true \
                d.video_0 ! queue ! fakesink sync=false >"$out/$run.log" 2>&1 || echo "exit $?" >>"$out/$run.log" ;;
        ffmpeg-vn)
            "${timer[@]}" ffmpeg -nostdin -v error -re -i "$url" -vn -f null - >"$out/$run.log" 2>&1 ||
                echo "exit $?" >>"$out/$run.log" ;;
        ffmpeg-vn-short)
            "${timer[@]}" ffmpeg -nostdin -v error -re -i "$url" -t "$short" -vn -f null - >"$out/$run.log" 2>&1 ||
                echo "exit $?" >>"$out/$run.log" ;;
    esac
}

tools=(castline-audio castline-video ffmpeg-vn gst-audio castline-audio-short ffmpeg-vn-short gst-audio-short)
nt=${#tools[@]}
results=$out/results.tsv
printf 'round\ttool\tcpu_s\tmaxrss_kb\twall_s\tfirst_audio_s\n' >"$results"
echo "castline listen benchmark: ${duration} s of 720p HLS, $rounds round(s); castline: $castline; logs: $out"
for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < nt; i++)); do
        tool=${tools[$(((i + r - 1) % nt))]}
        run "$tool" "r$r-$tool"
        read -r user sys rss wall < <(tail -n 1 "$out/r$r-$tool.time") || { user=0 sys=0 rss=0 wall=0; }
        cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
        printf '%d\t%s\t%s\t%s\t%s\t-\n' "$r" "$tool" "$cpu" "$rss" "$wall" >>"$results"
        printf '  round %d  %-20s cpu %6.2f s  rss %5d MB  wall %5.1f s\n' "$r" "$tool" "$cpu" $((rss / 1024)) "$wall"
    done
    for ((k = 0; k < first_runs; k++)); do
        line=""
        for tool in castline-first ffmpeg-first gst-first; do
            first=$(first_audio "$tool")
            printf '%d\t%s\t-\t-\t-\t%s\n' "$r" "$tool" "${first:--}" >>"$results"
            line+="  $tool ${first:--}"
        done
        printf '  round %d  first audio:%s\n' "$r" "$line"
    done
done

awk -F'\t' '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n == 0 ? 0 : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
function verdict(r, target) { return r <= target ? "PASS" : "MISS" }
NR > 1 {
    if ($3 != "-") cpu[$2] = cpu[$2] " " $3
    if ($4 != "-") rss[$2] = rss[$2] " " $4
    if ($6 != "-" && $6 != "") first[$2] = first[$2] " " $6
}
END {
    a = median(cpu["castline-audio"]); v = median(cpu["castline-video"]); f = median(cpu["ffmpeg-vn"])
    as = median(cpu["castline-audio-short"]); fs = median(cpu["ffmpeg-vn-short"])
    g = median(cpu["gst-audio"]); gs = median(cpu["gst-audio-short"])
    printf "\n%-20s %8s %12s\n", "tool", "CPU-s", "peak RSS MB"
    n = split("castline-audio castline-video ffmpeg-vn gst-audio castline-audio-short ffmpeg-vn-short gst-audio-short", names, " ")
    for (i = 1; i <= n; i++) printf "%-20s %8.2f %12.0f\n", names[i], median(cpu[names[i]]), median(rss[names[i]]) / 1024
    printf "\n"
    if (v > 0) printf "castline audio-only / with video = %.3f; target <= 0.50: %s\n", a / v, verdict(a / v, 0.5)
    if (f > 0) printf "castline audio-only / ffmpeg -vn = %.3f; target <= 0.80: %s\n", a / f, verdict(a / f, 0.8)
    if (g > 0) printf "  castline audio-only / gst-launch uridecodebin3 = %.3f; gst-launch / ffmpeg -vn = %.3f [diagnostic]\n", a / g, g / f
    if (a > as && f > fs) {
        ps = (a - as) / (long - short); pf = (f - fs) / (long - short)
        printf "  split [diagnostic]: castline %.3f CPU-s start-up + %.4f per second of stream; ffmpeg %.3f + %.4f; per second %.3f\n", \
            as - ps * short, ps, fs - pf * short, pf, ps / pf
        if (g > gs) {
            pg = (g - gs) / (long - short)
            printf "  split [diagnostic]: gst-launch %.3f CPU-s start-up + %.4f per second\n", gs - pg * short, pg
        }
    }
    ca = median(first["castline-first"]); fa = median(first["ffmpeg-first"]); ga = median(first["gst-first"])
    if (ca > 0 && fa > 0)
        printf "time to first audio: castline %.3f s, ffmpeg %.3f s, ratio %.3f; target <= 0.80: %s\n", ca, fa, ca / fa, verdict(ca / fa, 0.8)
    else
        printf "time to first audio: could not be read (castline %s, ffmpeg %s)\n", ca, fa
    if (ga > 0 && ca > 0) printf "  gst-launch playbin3 %.3f s; castline / playbin3 %.3f [diagnostic]\n", ga, ca / ga
}' long="$duration" short="$short" "$results" | tee "$out/summary.txt"
echo "(medians; CPU-s for the whole stream, ${duration} s (short runs ${short} s), each played at its own pace)"
exit 0
