#!/usr/bin/env bash
# Benchmark: one hour of 128 kbps AAC pushed through `delay {initial: 0s, max: 1h}`
# as fast as the machine allows (issue #6).
#
# The media: 1 h of AAC-LC 48 kHz stereo at 128 kbps in an .m4a, made once with
# ffmpeg and cached (BENCH_CACHE). Its AAC packets' bytes (ffprobe) are the encoded
# bytes the history holds once it holds the hour; the same hour decoded to s16le by
# ffmpeg is the raw PCM it would hold instead.
#
# castline runs `file → delay {initial: 0s, max: 1h} → null` with --stats-json; a
# monitor samples /proc/PID/status every 20 ms and reads the JSON lines:
#   - RSS growth = peak VmHWM until the history holds the hour (available delay ≥
#     3599 s) minus VmRSS at the delay stage's first unit (its delay-changed event);
#   - push speed = slope of available delay over wall time (its samples come once a
#     second), in times real time; "hold 1h" = first unit to the hour held.
# A second castline run with `max: 1s` (same media, same pipeline, holds nothing) for
# the same wall time shows what grows besides the history.
# Peers, side by side in the same run:
#   ffmpeg-copy   ffmpeg -i M -c copy -f null -                         (demux only: push time)
#   gst-parse     gst-launch-1.0 filesrc ! qtdemux ! aacparse ! fakesink sync=false   (push time)
#   gst-queue-1h  ... aacparse ! queue (unlimited) ! fakesink sync=true: the hour held
#                 as GstBuffers (RSS growth against the same line with a 1 s queue)
#
# Targets (issue): RSS growth ≤ 1.2 × encoded bytes held (≈ 0.09 × raw PCM expected),
# push ≥ 100× real time. Benchmarks report, they do not assert: exit 0 either way
# (non-zero only if it cannot run).
#
# Environment:
#   CASTLINE    castline binary (default .build/debug/castline; .build/release/castline
#               for the figures that matter)
#   ROUNDS      rounds (default 2; medians are reported)
#   BENCH_CACHE where the 1 h media and its byte counts are kept (default /tmp/castline-bench-cache)
#   BENCH_OUT   directory for logs and results.tsv (default: a new temp dir, kept)
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
rounds=${ROUNDS:-2}
cache=${BENCH_CACHE:-/tmp/castline-bench-cache}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-delay-bench.XXXXXX)}
mkdir -p "$out" "$cache"

die() { echo "delay-history: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive integer"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"
for tool in ffmpeg ffprobe gst-launch-1.0 python3; do command -v "$tool" >/dev/null || die "$tool is missing"; done

# ---- the media (cached) ----------------------------------------------------------
media=$cache/aac-1h-128k.m4a
if [[ ! -s $media ]]; then
    echo "making 1 h of 128 kbps AAC-LC 48 kHz stereo (once; cached in $cache)..."
    # Pink noise under a tone: the encoder has something to spend its 128 kbps on.
    ffmpeg -nostdin -v error -y -f lavfi -i "anoisesrc=color=pink:amplitude=0.2:sample_rate=48000" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -filter_complex "[0][1]amix=inputs=2,aformat=channel_layouts=stereo" -t 3600 \
        -c:a aac -b:a 128k -ar 48000 -ac 2 -movflags +faststart "$media.partial.m4a" ||
        die "ffmpeg could not make the media"
    mv "$media.partial.m4a" "$media"
    rm -f "$media.encoded-bytes" "$media.pcm-bytes"
fi
if [[ ! -s $media.encoded-bytes ]]; then
    ffprobe -v error -select_streams a -show_entries packet=size -of csv=p=0 "$media" |
        awk '{ bytes += $1 } END { print bytes }' >"$media.encoded-bytes"
fi
if [[ ! -s $media.pcm-bytes ]]; then
    echo "decoding the hour to s16le once, to count its raw PCM bytes..."
    ffmpeg -nostdin -v error -i "$media" -f s16le - | wc -c >"$media.pcm-bytes"
fi
encoded_bytes=$(cat "$media.encoded-bytes")
pcm_bytes=$(cat "$media.pcm-bytes")
[[ $encoded_bytes -gt 50000000 && $pcm_bytes -gt 600000000 ]] ||
    die "odd byte counts for $media (encoded $encoded_bytes, PCM $pcm_bytes); remove $cache and run again"

pipeline() {  # $1: max
    cat >"$out/delay-$1.yaml" <<YAML
version: 1
name: delay-history-$1
source:
  file: $media
stages:
  - delay: { initial: 0s, max: $1 }
sinks:
  - null: {}
YAML
}
pipeline 1h
pipeline 1s

# The delay stage must take the media encoded: no decoder anywhere in the graph.
"$castline" graph "$out/delay-1h.yaml" -o "$out/delay-1h.dot" >/dev/null 2>&1 || die "castline graph failed"
if grep -qiE 'avdec_|faad|fdkaacdec' "$out/delay-1h.dot"; then
    graph_note="WARNING: the graph decodes before the delay stage (see $out/delay-1h.dot)"
else
    graph_note="the delay stage takes the AAC encoded (no decoder in the graph)"
fi

# ---- the monitor -------------------------------------------------------------------
cat >"$out/monitor.py" <<'EOF'
# Runs a command, samples its VmRSS/VmHWM every 20 ms, and (castline) reads its JSON
# lines. Stops it (SIGINT, then SIGKILL) when done. Prints key=value figures.
#   monitor.py MODE LIMIT_S LOG JSONL -- COMMAND...
#   MODE: full (until available delay >= 3599 s), for=SECONDS (after the first unit,
#   or after start without JSON lines), stable (until RSS grows < 0.5 MB in 1 s)
import datetime, json, os, signal, subprocess, sys, time

mode, limit, log, jsonl = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4]
command = sys.argv[sys.argv.index("--") + 1:]

def status(pid):
    figures = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                figures[key] = int(value.split()[0])
    except OSError:
        pass
    return figures

def wall(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()

started = time.time()
process = subprocess.Popen(command, stdout=open(log, "wb"), stderr=subprocess.STDOUT)
first_unit = first_unit_rss = full_at = None
available = []  # (wall, seconds)
peak = 0
rss_history = []  # (wall, VmRSS)
offset = 0
done = False
while not done and process.poll() is None and time.time() - started < limit:
    time.sleep(0.02)
    now = time.time()
    figures = status(process.pid)
    if not figures:
        continue
    peak = max(peak, figures.get("VmHWM", 0))
    rss_history.append((now, figures.get("VmRSS", 0)))
    if jsonl != "-" and os.path.exists(jsonl):
        with open(jsonl) as lines:
            lines.seek(offset)
            text = lines.read()
            complete = text[: text.rfind("\n") + 1]
            offset += len(complete.encode())
        for line in complete.splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if event.get("event") == "delay-changed" and first_unit is None:
                first_unit, first_unit_rss = wall(event["ts"]), figures.get("VmRSS", 0)
            held = event.get("available_delay_s", event.get("available_s"))
            if held is not None and event.get("event") in ("stats", "available-delay-changed"):
                available.append((wall(event["ts"]), float(held)))
                if held >= 3599 and full_at is None:
                    full_at = wall(event["ts"])
    if mode == "full":
        done = full_at is not None
    elif mode.startswith("for="):
        since = first_unit if jsonl != "-" else started
        done = since is not None and now - since >= float(mode[4:])
    elif mode == "stable":
        old = [rss for at, rss in rss_history if now - at >= 1.0]
        grown = rss_history[-1][1] - rss_history[0][1] > 20 * 1024
        done = grown and bool(old) and rss_history[-1][1] - old[-1] < 512
        if done:
            full_at = now
exited = process.poll()
if exited is None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
print(f"peak_kb={peak}")
print(f"exited_early={'no' if exited is None else exited}")
if first_unit_rss is not None:
    print(f"first_unit_rss_kb={first_unit_rss}")
if first_unit is not None and full_at is not None:
    print(f"hold_s={full_at - first_unit:.3f}")
if mode == "stable" and full_at is not None:
    print(f"stable_after_s={full_at - started:.3f}")
# Push speed: the slope of available delay over wall time, between its first
# growing sample and the last one before the hour is held.
growing = [(at, held) for at, held in available if 0 < held < 3599]
if len(growing) >= 2 and growing[-1][0] > growing[0][0]:
    print(f"push_x={(growing[-1][1] - growing[0][1]) / (growing[-1][0] - growing[0][0]):.1f}")
elif first_unit is not None and full_at is not None and full_at > first_unit:
    print(f"push_x={3600 / (full_at - first_unit):.1f}")
if available:
    print(f"available_s={max(held for _, held in available):.1f}")
EOF

figure() { sed -n "s/^$1=//p" "$2" | tail -n 1; }
timed() {  # run-name, command... -> wall seconds and peak RSS in $out/run.time
    local run=$1; shift
    /usr/bin/time -f '%e %M' -o "$out/$run.time" "$@" >"$out/$run.log" 2>&1 || echo "exit $?" >>"$out/$run.log"
}

results=$out/results.tsv
printf 'round\ttool\tpush_wall_s\tpush_x\trss_growth_kb\tnote\n' >"$results"
echo "delay history benchmark: 1 h of 128 kbps AAC ($encoded_bytes encoded bytes, $pcm_bytes bytes of s16le PCM), $rounds round(s)"
echo "castline: $castline; logs: $out"
echo "$graph_note"
queue_unlimited="queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"
queue_1s="queue max-size-buffers=0 max-size-bytes=0 max-size-time=1000000000"
for ((r = 1; r <= rounds; r++)); do
    # castline, the hour held.
    rm -f "$out/r$r-castline.jsonl"
    python3 "$out/monitor.py" full 300 "$out/r$r-castline.log" "$out/r$r-castline.jsonl" -- \
        "$castline" run "$out/delay-1h.yaml" --stats-json "$out/r$r-castline.jsonl" >"$out/r$r-castline.fig"
    hold=$(figure hold_s "$out/r$r-castline.fig"); push=$(figure push_x "$out/r$r-castline.fig")
    base=$(figure first_unit_rss_kb "$out/r$r-castline.fig"); peak=$(figure peak_kb "$out/r$r-castline.fig")
    if [[ -n $hold && -n $push && -n $base ]]; then
        growth=$((peak - base))
        printf '%d\tcastline\t%s\t%s\t%d\t-\n' "$r" "$hold" "$push" "$growth" >>"$results"
        printf '  round %d  %-18s held the hour in %6.2f s (%6.1fx real time)  RSS %d -> %d MB (+%.1f MB)\n' \
            "$r" castline "$hold" "$push" $((base / 1024)) $((peak / 1024)) "$(echo "$growth / 1024" | bc -l)"
    else
        printf '%d\tcastline\t-\t-\t-\tINVALID\n' "$r" >>"$results"
        echo "  round $r  castline did not hold the hour (available $(figure available_s "$out/r$r-castline.fig") s); see $out/r$r-castline.log"
    fi
    # castline, holding 1 s, for as long as the hour took: what grows besides the history.
    rm -f "$out/r$r-castline-1s.jsonl"
    python3 "$out/monitor.py" "for=${hold:-10}" 300 "$out/r$r-castline-1s.log" "$out/r$r-castline-1s.jsonl" -- \
        "$castline" run "$out/delay-1s.yaml" --stats-json "$out/r$r-castline-1s.jsonl" >"$out/r$r-castline-1s.fig"
    base1=$(figure first_unit_rss_kb "$out/r$r-castline-1s.fig"); peak1=$(figure peak_kb "$out/r$r-castline-1s.fig")
    if [[ -n $base1 ]]; then
        printf '%d\tcastline-max-1s\t-\t-\t%d\t-\n' "$r" $((peak1 - base1)) >>"$results"
        printf '  round %d  %-18s RSS %d -> %d MB (+%.1f MB) over the same time\n' \
            "$r" castline-max-1s $((base1 / 1024)) $((peak1 / 1024)) "$(echo "($peak1 - $base1) / 1024" | bc -l)"
        [[ -n $base ]] && printf '%d\tcastline-1h-minus-1s\t-\t-\t%d\t-\n' "$r" $((peak - peak1)) >>"$results"
    fi
    # Peers: push time.
    timed "r$r-ffmpeg-copy" ffmpeg -nostdin -v error -i "$media" -c copy -f null -
    timed "r$r-gst-parse" gst-launch-1.0 -q filesrc location="$media" ! qtdemux ! aacparse ! fakesink sync=false
    for tool in ffmpeg-copy gst-parse; do
        read -r wall rss <"$out/r$r-$tool.time" || { wall=0 rss=0; }
        speed=$(awk -v w="$wall" 'BEGIN { print (w > 0 ? 3600 / w : 0) }')
        printf '%d\t%s\t%s\t%.1f\t-\t-\n' "$r" "$tool" "$wall" "$speed" >>"$results"
        printf '  round %d  %-18s pushed the hour in %6.2f s (%6.1fx real time)\n' "$r" "$tool" "$wall" "$speed"
    done
    # Peer: the hour held as GstBuffers in a queue, against the same line with a 1 s queue.
    python3 "$out/monitor.py" stable 120 "$out/r$r-gst-queue.log" - -- \
        gst-launch-1.0 -q filesrc location="$media" ! qtdemux ! aacparse ! $queue_unlimited ! fakesink sync=true \
        >"$out/r$r-gst-queue.fig"
    stable=$(figure stable_after_s "$out/r$r-gst-queue.fig")
    python3 "$out/monitor.py" "for=${stable:-10}" 120 "$out/r$r-gst-queue-1s.log" - -- \
        gst-launch-1.0 -q filesrc location="$media" ! qtdemux ! aacparse ! $queue_1s ! fakesink sync=true \
        >"$out/r$r-gst-queue-1s.fig"
    gpeak=$(figure peak_kb "$out/r$r-gst-queue.fig"); gpeak1=$(figure peak_kb "$out/r$r-gst-queue-1s.fig")
    printf '%d\tgst-queue-1h\t-\t-\t%d\t-\n' "$r" $((gpeak - gpeak1)) >>"$results"
    printf '  round %d  %-18s peak RSS %d MB, with a 1 s queue %d MB (+%.1f MB for the hour)\n' \
        "$r" gst-queue-1h $((gpeak / 1024)) $((gpeak1 / 1024)) "$(echo "($gpeak - $gpeak1) / 1024" | bc -l)"
done

awk -F'\t' -v encoded="$encoded_bytes" -v pcm="$pcm_bytes" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n == 0 ? 0 : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
function verdict(ok) { return ok ? "PASS" : "MISS" }
NR > 1 && $6 != "INVALID" {
    if ($3 != "-") wall[$2] = wall[$2] " " $3
    if ($4 != "-") speed[$2] = speed[$2] " " $4
    if ($5 != "-") growth[$2] = growth[$2] " " $5
}
END {
    g = median(growth["castline"]) * 1024; x = median(speed["castline"]); h = median(wall["castline"])
    fc = x > 0 ? 3600 / x : 0
    printf "\n%-22s %12s %12s %16s\n", "tool", "push s", "x real time", "RSS growth MB"
    printf "%-22s %12.2f %12.1f %16.1f\n", "castline max 1h", fc, x, g / 1048576
    printf "%-22s %12s %12s %16.1f\n", "castline max 1s", "", "", median(growth["castline-max-1s"]) / 1024
    printf "%-22s %12.2f %12.1f %16s\n", "ffmpeg -c copy", median(wall["ffmpeg-copy"]), median(speed["ffmpeg-copy"]), ""
    printf "%-22s %12.2f %12.1f %16s\n", "gst-launch demux+parse", median(wall["gst-parse"]), median(speed["gst-parse"]), ""
    printf "%-22s %12s %12s %16.1f\n\n", "gst-launch queue 1h", "", "", median(growth["gst-queue-1h"]) / 1024
    if (g == 0) { print "castline: no valid run"; exit }
    printf "encoded bytes held %.1f MB, raw PCM %.1f MB\n", encoded / 1048576, pcm / 1048576
    printf "castline RSS growth / encoded bytes = %.3f; target <= 1.20: %s\n", g / encoded, verdict(g / encoded <= 1.2)
    printf "castline RSS growth / raw PCM bytes = %.3f (expected about 0.09)\n", g / pcm
    printf "castline push = %.1fx real time; target >= 100: %s\n", x, verdict(x >= 100)
    printf "castline held the hour %.1f s after its first unit (from once-a-second samples)\n", h
    if (median(wall["ffmpeg-copy"]) > 0)
        printf "castline push time / ffmpeg -c copy = %.2f (%.2f s vs %.2f s)\n", fc / median(wall["ffmpeg-copy"]), fc, median(wall["ffmpeg-copy"])
    if (median(wall["gst-parse"]) > 0)
        printf "castline push time / gst-launch demux+parse = %.2f\n", fc / median(wall["gst-parse"])
    q = median(growth["gst-queue-1h"]) * 1024
    if (q > 0) printf "castline RSS growth / gst-launch 1 h queue (GstBuffers) = %.3f  [diagnostic]\n", g / q
    d = median(growth["castline-1h-minus-1s"]) * 1024
    if (d > 0) printf "castline peak RSS max 1h - max 1s = %.1f MB = %.3f x encoded bytes  [diagnostic]\n", d / 1048576, d / encoded
}' "$results" | tee "$out/summary.txt"
echo "(medians over rounds; castline's push s is 3600 s over its push speed, the slope of available delay over wall time)"
grep -q "no valid run" "$out/summary.txt" && exit 1
exit 0
