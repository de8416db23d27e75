#!/usr/bin/env bash
# Benchmark: CPU cost of the 720p30 test broadcast over RTMP.
#
# One local ingest (`castline ingest`), then five publishers of the same
# 1280x720 30 fps test signal + 48 kHz stereo tone, x264 veryfast/zerolatency
# 2500k + AAC 128k, run ONE AFTER ANOTHER (never at once: they would fight for
# the cores), each for DURATION seconds, ROUNDS times (the order rotates each
# round). Each publisher's whole process is measured with /usr/bin/time:
# user+sys CPU seconds (children included) and peak RSS.
#
#   castline     castline broadcast RTMP_URL --key-env ... --duration Ns
#   castline-3dest  the same to three destinations at once (three keys on the ingest), one encode;
#                started together with castline-beside, a one-destination castline, and
#                compared with it: the machine's speed drifts between runs (the same castline
#                run read 5.85 to 7.43 CPU-s within minutes), two runs side by side drift alike
#   gst-launch   the equivalent hand-written gst-launch-1.0 line (SIGINT + -e after N s), with the
#                encode castline's test broadcast asks for (one x264 thread, a quantizer floor of 20)
#   ffmpeg       ffmpeg -re lavfi testsrc2 + sine, libx264 veryfast zerolatency 2500k CBR
#                (-minrate/-maxrate/-bufsize 2500k, -x264-params nal-hrd=cbr), aac 128k
# All three encode constant bitrate (castline's default: x264 NAL HRD CBR with filler).
#
# Targets (issue #35): castline/ffmpeg <= 0.80, castline-3dest/castline-beside <= 1.05 (three
# destinations from one encode against one), castline's overhead over raw GStreamer <= 1.05
# (castline-plain/gst-launch: the same picture and encode), and what the test signal's
# moving caption, clock stripe, beep and flash cost over a still caption <= 1.10
# (castline/castline-plain), as CPU seconds per second of media published.
# castline/gst-launch is reported beside them. Benchmarks report, they do not assert:
# the verdicts say PASS/MISS and the script exits 0 either way (non-zero only if
# the benchmark itself cannot run). A run is INVALID (and left out of the
# medians) unless its HLS playlist on the ingest has >= 3 segments and ffprobe
# reads h264 1280x720 from it.
#
# Environment:
#   CASTLINE   castline binary (default .build/release/castline, what `make bench` builds)
#   DURATION   seconds per publisher (default 20)
#   ROUNDS     rounds of the publishers (default 2)
#   castline-plain  castline run with the picture gst-launch can draw: the caption
#              still, no beep and flash (test: {video: {caption: still}, audio:
#              {beep: 0s}}) and the encode the test broadcast asks for (threads: 1, qp-min: 20):
#              castline's own overhead over raw GStreamer, like for like
#   EXTRA=1    also run two diagnostic gst-launch variants: without the caption,
#              and with the scrolling SD bars castline used to send (the x264
#              cost of the content), then an encode-only check: x264enc and
#              ffmpeg's libx264 encoding the very same raw testsrc2 frames (as
#              fast as they can, 300 frames each)
#   TOOLS      only these publishers, e.g. TOOLS="castline castline-3dest" (a ratio whose two
#              sides did not both run says so)
#   BENCH_OUT  directory for logs and results.tsv (default: a new temp dir, kept)
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
duration=${DURATION:-20}
rounds=${ROUNDS:-2}
extra=${EXTRA:-0}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-bench.XXXXXX)}
mkdir -p "$out"

die() { echo "broadcast-cpu: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ $duration =~ ^[0-9]+$ && $duration -ge 8 && $duration -le 28 ]] ||
    die "DURATION must be whole seconds from 8 (3 HLS segments of 2 s) to 28 (the media is counted in the ingest's 30 s playlist)"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
if [[ ! -x /usr/bin/time ]]; then
    if [[ $(id -u) = 0 ]]; then
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q time >/dev/null || die "could not install time"
    else
        die "/usr/bin/time is missing (apt-get install time)"
    fi
fi
for tool in gst-launch-1.0 ffmpeg ffprobe curl timeout; do
    command -v "$tool" >/dev/null || die "$tool is missing"
done

# ---- ingest ---------------------------------------------------------------
source "$here/lib/ingest.bash"
start_ingest

# ---- publishers -----------------------------------------------------------
# Each runs under /usr/bin/time; writes "user sys maxrss_kb wall" to $out/$run.time.
# The equivalent hand-written gst-launch-1.0 line, as an argument list; $1 is the
# overlay (empty for none), $2 the URL. Sets the array `gst`.
gst_line() {
    local overlay=() url=$2 pattern=${3:-pattern=smpte-rp-219}
    [[ -n $1 ]] && read -a overlay <<<"$1 !"
    gst=(gst-launch-1.0 -e
        videotestsrc is-live=true $pattern
        ! video/x-raw,width=1280,height=720,framerate=30/1,format=I420
        ! "${overlay[@]}"
        x264enc tune=zerolatency speed-preset=veryfast key-int-max=60 bitrate=2500 vbv-buf-capacity=1000 threads=1 option-string=nal-hrd=cbr:filler=1:qpmin=20
        ! video/x-h264,profile=high ! h264parse ! queue
        ! flvmux name=mux streamable=true ! rtmp2sink "location=$url"
        audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! audioresample
        ! voaacenc bitrate=128000 ! aacparse ! queue ! mux.)
}

publish() {  # tool key run
    local tool=$1 key=$2 run=$3 url=$rtmp_base/$2
    local timefile=$out/$run.time log=$out/$run.log
    local timer=(/usr/bin/time -f '%U %S %M %e' -o "$timefile")
    case $tool in
        castline-plain)
            # The picture the gst-launch line draws (caption still, top left; no beep,
            # flash or clock stripe, which no gst-launch line can draw): the like-for-like overhead.
            plain_pipeline "$out/plain.yaml" "{video: {threads: 1, qp-min: 20}, audio: {}}" \
                "rtmp: {url: \"$rtmp_base\", key: \"\${BENCH_STREAM_KEY}\"}"
            BENCH_STREAM_KEY=$key "${timer[@]}" "$castline" run "$out/plain.yaml" \
                --duration "${duration}s" >"$log" 2>&1 ;;
        castline | castline-beside)
            BENCH_STREAM_KEY=$key "${timer[@]}" "$castline" broadcast "$rtmp_base" \
                --key-env BENCH_STREAM_KEY --duration "${duration}s" >"$log" 2>&1 ;;
        castline-3dest)
            # Checked on the first key; the other two must have published as long (see check_published).
            BENCH_STREAM_KEY=$key KEY_B=$key-b KEY_C=$key-c "${timer[@]}" "$castline" broadcast "$rtmp_base" "$rtmp_base" \
                "$rtmp_base" --key-env BENCH_STREAM_KEY --key-env KEY_B --key-env KEY_C --duration "${duration}s" >"$log" 2>&1 ;;
        gst-*)
            case $tool in
                # castline's own picture: HD bars and a caption re-rendered every
                # frame (timeoverlay does that too), shaded, no outline or shadow.
                gst-launch) gst_line "$plain_caption" "$url" ;;
                gst-nooverlay) gst_line '' "$url" ;;
                # The scrolling SD bars castline used before: the content alone
                # moves the x264 cost (see bench/README.md).
                gst-scrolling-smpte) gst_line "$plain_caption" "$url" 'pattern=smpte horizontal-speed=2' ;;
            esac
            # gst-launch has no duration flag: SIGINT after DURATION, and -e turns it into EOS.
            "${timer[@]}" timeout -s INT -k 15 "$duration" "${gst[@]}" >"$log" 2>&1 ;;
        ffmpeg)
            "${timer[@]}" ffmpeg -nostdin -hide_banner -loglevel warning -re \
                -f lavfi -i testsrc2=size=1280x720:rate=30 -f lavfi -i sine=frequency=1000:sample_rate=48000 \
                -t "$duration" -c:v libx264 -preset veryfast -tune zerolatency -b:v 2500k -minrate 2500k -maxrate 2500k \
                -bufsize 2500k -x264-params nal-hrd=cbr -g 60 -pix_fmt yuv420p -c:a aac -b:a 128k -ar 48000 -ac 2 \
                -f flv "$url" >"$log" 2>&1 ;;
    esac
}

# Checks the run's HLS output; prints "media_seconds segments" or fails with a reason.
check_published() {  # key run
    local key=$1 run=$2 playlist=$out/$2.m3u8 probe
    sleep 1  # let nginx-rtmp close the last fragment and rewrite the playlist
    curl -fsS "$hls_base/$key.m3u8" -o "$playlist" 2>/dev/null || { echo "no HLS playlist"; return 1; }
    local segments media
    segments=$(grep -c '^#EXTINF:' "$playlist" || true)
    media=$(awk -F'[:,]' '/^#EXTINF:/ {s += $2} END {printf "%.2f", s}' "$playlist")
    (( segments >= 3 )) || { echo "only $segments HLS segments"; return 1; }
    # stdout only: with NAL HRD (CBR) ffprobe warns that the first segment's buffering-period SEI
    # comes before its SPS (nginx-rtmp's placing, the same for ffmpeg's CBR), which is harmless.
    probe=$(ffprobe -v error -select_streams v:0 -show_entries stream=codec_name,width,height \
        -of csv=p=0 "$hls_base/$key.m3u8" 2>/dev/null | head -1)
    [[ $probe == "h264,1280,720" ]] || { echo "ffprobe read \"$probe\", not h264,1280,720"; return 1; }
    if [[ $run == *-castline-3dest ]]; then
        local other other_media
        for other in "$key-b" "$key-c"; do
            other_media=$(curl -fsS "$hls_base/$other.m3u8" 2>/dev/null | awk -F'[:,]' '/^#EXTINF:/ {s += $2} END {printf "%.2f", s}')
            awk -v a="$other_media" -v b="$media" 'BEGIN {exit !(a + 2.5 >= b)}' ||
                { echo "destination $other published ${other_media:-0} s of $media"; return 1; }
        done
    fi
    echo "$media $segments"
}

# CPU seconds the whole machine spent busy, and stolen by the hypervisor, so far:
# the difference over a run, less the publisher's own, is everyone else's load.
machine_cpu() {
    awk -v tck="$(getconf CLK_TCK)" '/^cpu / {printf "%.2f %.2f\n", ($2 + $3 + $4 + $7 + $8) / tck, $9 / tck; exit}' /proc/stat
}

# Checks and records one run: a row in results.tsv and a line on screen. $6: the CPU seconds of
# every publisher that ran at that moment, so "others" is the rest of the machine.
record() {  # round tool key run status publishers_cpu
    local r=$1 tool=$2 key=$3 run=$4 status=$5 publishers=$6 user sys rss wall note check media segments valid cpu others steal
    # The last line: GNU time puts "Command exited with non-zero status N" before it.
    read -r user sys rss wall < <(tail -n 1 "$out/$run.time" 2>/dev/null) || { user=0 sys=0 rss=0 wall=0; }
    # timeout exits 124 after delivering SIGINT: that is the normal stop for gst-launch.
    note=
    if [[ $status -ne 0 && ! ($status -eq 124 && $tool == gst-*) ]]; then
        note="exit $status"
    fi
    kill -0 "$ingest_pid" 2>/dev/null && ! grep -q 'ingest stopped' "$out/ingest-$ingests.err" ||
        note="${note:+$note; }the ingest was stopped during the run"
    if check=$(check_published "$key" "$run"); then
        read -r media segments <<<"$check"
        valid=yes
    else
        media=0 segments=0 valid=INVALID note="${note:+$note; }$check"
    fi
    [[ -n $note && $valid = yes ]] && valid=INVALID
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", u + s}')
    # Everyone else's CPU during the run (the ingest's included): high means a noisy run.
    others=$(awk -v a="$busy0" -v b="$busy1" -v c="$publishers" 'BEGIN {o = b - a - c; printf "%.1f", o < 0 ? 0 : o}')
    steal=$(awk -v a="$steal0" -v b="$steal1" 'BEGIN {printf "%.1f", b - a}')
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$tool" "$valid" "$cpu" "$user" "$sys" \
        "$rss" "$wall" "$media" "$segments" "$note" "$others" "$steal" >>"$results"
    printf '  round %d  %-16s %-7s cpu %6.2f s  (user %s sys %s)  rss %5d MB  wall %5.1f s  media %5.1f s  others %5.1f s  steal %4.1f s  %s\n' \
        "$r" "$tool" "$valid" "$cpu" "$user" "$sys" "$((rss / 1024))" "$wall" "$media" "$others" "$steal" "$note"
}

tools=(castline castline-3dest castline-plain gst-launch ffmpeg)
[[ $extra = 1 ]] && tools+=(gst-nooverlay gst-scrolling-smpte)
if [[ -n ${TOOLS:-} ]]; then
    read -r -a tools <<<"$TOOLS"
    for tool in "${tools[@]}"; do
        [[ $tool =~ ^(castline|castline-3dest|castline-plain|gst-launch|gst-nooverlay|gst-scrolling-smpte|ffmpeg)$ ]] || die "unknown tool \"$tool\" in TOOLS"
    done
fi
nt=${#tools[@]}

results=$out/results.tsv
printf 'round\ttool\tvalid\tcpu_s\tuser_s\tsys_s\tmaxrss_kb\twall_s\tmedia_s\tsegments\tnote\tothers_cpu_s\tsteal_s\n' >"$results"
echo "castline broadcast CPU benchmark: ${duration} s per publisher, $rounds round(s), ingest $rtmp_base"
echo "castline: $castline"
echo "logs: $out"
for ((r = 1; r <= rounds; r++)); do
    for ((i = 0; i < nt; i++)); do
        tool=${tools[$(((i + r - 1) % nt))]}   # rotate the order each round
        run=r$r-$tool
        key=bench-$tool-r$r-$RANDOM
        kill -0 "$ingest_pid" 2>/dev/null || { echo "  (the ingest was stopped from outside: restarting it)"; start_ingest; }
        # castline-3dest runs with a one-destination castline beside it (castline-beside), started
        # together: both see the same machine, which drifts by more than the figure between runs.
        runs=("$tool:$key:$run")
        [[ $tool == castline-3dest ]] && runs+=("castline-beside:$key-beside:r$r-castline-beside")
        read -r busy0 steal0 < <(machine_cpu)
        pids=()
        for entry in "${runs[@]}"; do
            IFS=: read -r t k n <<<"$entry"
            publish "$t" "$k" "$n" &
            pids+=($!)
        done
        statuses=()
        for pid in "${pids[@]}"; do status=0; wait "$pid" || status=$?; statuses+=("$status"); done
        read -r busy1 steal1 < <(machine_cpu)
        cpus=0
        for i_run in "${!runs[@]}"; do
            IFS=: read -r t k n <<<"${runs[$i_run]}"
            read -r user sys _ _ < <(tail -n 1 "$out/$n.time" 2>/dev/null) || { user=0 sys=0; }
            cpus=$(awk -v a="$cpus" -v u="$user" -v s="$sys" 'BEGIN {printf "%.2f", a + u + s}')
        done
        for i_run in "${!runs[@]}"; do
            IFS=: read -r t k n <<<"${runs[$i_run]}"
            record "$r" "$t" "$k" "$n" "${statuses[$i_run]}" "$cpus"
        done
    done
done

# ---- report ---------------------------------------------------------------
shown=("${tools[@]}")
[[ " ${tools[*]} " == *" castline-3dest "* ]] && shown+=(castline-beside)
awk -F'\t' -v order="${shown[*]}" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    if (n == 0) return -1
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
NR > 1 {
    runs[$2]++
    if ($3 != "yes") { bad[$2]++; next }
    cpu[$2] = cpu[$2] " " $4; rss[$2] = rss[$2] " " $7; media[$2] = media[$2] " " $9
    per[$2] = per[$2] " " ($9 > 0 ? $4 / $9 : 0); others[$2] = others[$2] " " $12
    round[$2, $1] = ($9 > 0 ? $4 / $9 : 0); if ($1 > rounds) rounds = $1
}
END {
    n = split(order, tools, " ")
    printf "\n%-16s %6s %8s %10s %13s %12s %14s\n", "tool", "valid", "CPU-s", "media-s", "CPU-s/media-s", "peak RSS MB", "others CPU-s"
    for (i = 1; i <= n; i++) {
        t = tools[i]; ok = runs[t] - bad[t]
        c[t] = median(cpu[t]); p[t] = median(per[t])
        if (ok > 0)
            printf "%-16s %3d/%-2d %8.2f %10.1f %13.3f %12.0f %14.1f\n", t, ok, runs[t], c[t], median(media[t]), p[t], median(rss[t]) / 1024, median(others[t])
        else
            printf "%-16s %3d/%-2d %8s %10s %13s %12s\n", t, ok, runs[t], "-", "-", "-", "-"
    }
    print ""
    ratio("castline", "ffmpeg", 0.80)
    ratio("castline-3dest", "castline-beside", 1.05)
    ratio("castline-plain", "gst-launch", 1.05)
    ratio("castline", "castline-plain", 1.10)
    ratio("castline", "gst-launch", -1)
    if ("gst-nooverlay" in runs) {
        ratio("gst-launch", "gst-nooverlay", -1)
        ratio("gst-scrolling-smpte", "gst-launch", -1)
    }
}
function ratio(a, b, target,   r, raw, verdict, pairs, k, paired) {
    if (p[a] <= 0 || p[b] <= 0) {
        printf "%s/%s: no valid runs to compare%s\n", a, b, (target > 0 ? "  -> INVALID" : "")
        return
    }
    r = p[a] / p[b]; raw = c[a] / c[b]
    # Paired too: the ratio within each round, whose two runs are minutes apart at most (the machine drifts more between rounds).
    pairs = ""
    for (k = 1; k <= rounds; k++) if (round[a, k] > 0 && round[b, k] > 0) pairs = pairs " " round[a, k] / round[b, k]
    paired = median(pairs)
    if (target > 0) {
        verdict = r <= target ? "PASS" : "MISS"
        printf "%s/%s = %.3f per media second (raw CPU-s %.3f; paired by round %.3f); target <= %.2f: %s\n", a, b, r, raw, paired, target, verdict
    } else {
        printf "%s/%s = %.3f per media second (raw CPU-s %.3f; paired by round %.3f)  [diagnostic]\n", a, b, r, raw, paired
    }
}' "$results" | tee "$out/summary.txt"
echo "(medians over valid runs; ratios compare CPU-s per media second, the media duration read from each run's HLS"
echo " playlist; others CPU-s: the rest of the machine during the run, ingest included; high values mean noisy figures)"

# ---- encode-only, equal content (EXTRA=1) ------------------------------------
# The live runs above send different pictures (castline's bars, ffmpeg's
# testsrc2), and x264's cost depends on the picture. Here both encoders get the
# very same raw frames, so the figure is the encoders' own difference.
if [[ $extra = 1 ]]; then
    raw=$out/testsrc2-720p.yuv
    ffmpeg -nostdin -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 -frames:v 300 \
        -pix_fmt yuv420p -f rawvideo "$raw"
    cpu_of() { /usr/bin/time -f '%U %S' -o "$out/encode.time" "$@" >/dev/null 2>&1; awk '{print $1 + $2}' "$out/encode.time"; }
    x264enc_cpu=$(cpu_of gst-launch-1.0 -q filesrc "location=$raw" ! rawvideoparse width=1280 height=720 format=i420 framerate=30/1 \
        ! x264enc tune=zerolatency speed-preset=veryfast key-int-max=60 bitrate=2500 ! fakesink)
    libx264_cpu=$(cpu_of ffmpeg -nostdin -loglevel error -f rawvideo -pix_fmt yuv420p -s 1280x720 -r 30 -i "$raw" \
        -c:v libx264 -preset veryfast -tune zerolatency -b:v 2500k -maxrate 2500k -bufsize 1250k -g 60 -f null -)
    rm -f "$raw"
    awk -v a="$x264enc_cpu" -v b="$libx264_cpu" 'BEGIN {
        printf "encode-only, same 300 raw frames: x264enc %.2f CPU-s, libx264 %.2f CPU-s, ratio %.3f  [diagnostic]\n", a, b, a / b }' \
        | tee -a "$out/summary.txt"
fi
exit 0
