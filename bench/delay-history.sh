#!/usr/bin/env bash
# Benchmark: one hour of 128 kbps AAC pushed through `delay {initial: 0s, max: 1h}`
# as fast as the machine allows (issue #6).
#
# The media: 1 h of AAC-LC 48 kHz stereo at 128 kbps, made once with ffmpeg and
# cached (BENCH_CACHE), as ADTS frames (what HLS carries in its segments; the bytes
# the history holds once it holds the hour) and as .m4a (a diagnostic). The same hour
# decoded to s16le by ffmpeg is the raw PCM it would hold instead.
#
# castline runs `file → delay {initial: 0s, max: 1h} → null` with --stats-json; a
# monitor samples /proc/PID/status every 20 ms and reads the JSON lines:
#   - RSS growth = peak VmHWM until the history holds the hour (available delay ≥
#     3599 s) minus VmRSS at the delay stage's first unit (its delay-changed event);
#   - push speed = slope of available delay over wall time (its samples come once a
#     second), in times real time; "held the hour" = first unit to the hour held.
# A second castline run with `max: 1s` (same media, same pipeline, holds nothing) for
# the same wall time shows what grows besides the history.
# Peers, side by side in the same run:
#   ffmpeg-copy   ffmpeg -i ADTS -c copy -f null -                    (push time)
#   gst-parse     gst-launch-1.0 filesrc ! aacparse ! fakesink sync=false  (push time)
#   gst-queue-1h  ... aacparse ! queue (unlimited) ! fakesink sync=true: the hour held
#                 as GstBuffers (RSS growth against the same line with a 1 s queue)
#
# Targets (issue): RSS growth ≤ 1.2 × encoded bytes held (≈ 0.09 × raw PCM expected),
# push ≥ 100× real time. Benchmarks report, they do not assert: exit 0 either way
# (non-zero only if it cannot run).
#
# Environment:
#   CASTLINE    castline binary (default .build/release/castline, what `make bench` builds)
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
# The hour is made once as .m4a, and copied (not re-encoded) to ADTS: AAC frames as
# HLS delivers them in its TS segments, read without a container index. The .m4a is
# run too, as a diagnostic: qtdemux's index of its 168,750 frames grows with the
# push (~5 MB), and counts against castline's RSS there.
m4a=$cache/aac-1h-128k.m4a
adts=$cache/aac-1h-128k.aac
if [[ ! -s $m4a ]]; then
    echo "making 1 h of 128 kbps AAC-LC 48 kHz stereo (once; cached in $cache)..."
    # Pink noise under a tone: the encoder has something to spend its 128 kbps on.
    ffmpeg -nostdin -v error -y -f lavfi -i "anoisesrc=color=pink:amplitude=0.2:sample_rate=48000" \
        -f lavfi -i "sine=frequency=440:sample_rate=48000" \
        -filter_complex "[0][1]amix=inputs=2,aformat=channel_layouts=stereo" -t 3600 \
        -c:a aac -b:a 128k -ar 48000 -ac 2 -movflags +faststart "$m4a.partial.m4a" ||
        die "ffmpeg could not make the media"
    mv "$m4a.partial.m4a" "$m4a"
    rm -f "$m4a".*-bytes "$adts"
fi
if [[ ! -s $adts ]]; then
    ffmpeg -nostdin -v error -y -i "$m4a" -c copy -f adts "$adts.partial" || die "ffmpeg could not write ADTS"
    mv "$adts.partial" "$adts"
fi
if [[ ! -s $m4a.encoded-bytes ]]; then
    ffprobe -v error -select_streams a -show_entries packet=size -of csv=p=0 "$m4a" |
        awk '{ bytes += $1 } END { print bytes }' >"$m4a.encoded-bytes"
fi
if [[ ! -s $m4a.pcm-bytes ]]; then
    echo "decoding the hour to s16le once, to count its raw PCM bytes..."
    ffmpeg -nostdin -v error -i "$m4a" -f s16le - | wc -c >"$m4a.pcm-bytes"
fi
# What the history holds: every frame, as it arrives (ADTS: with its 7-byte header).
adts_bytes=$(stat -c %s "$adts")
m4a_bytes=$(cat "$m4a.encoded-bytes")
pcm_bytes=$(cat "$m4a.pcm-bytes")
[[ $m4a_bytes -gt 50000000 && $adts_bytes -gt $m4a_bytes && $pcm_bytes -gt 600000000 ]] ||
    die "odd byte counts (ADTS $adts_bytes, m4a frames $m4a_bytes, PCM $pcm_bytes); remove $cache and run again"

pipeline() {  # $1: name, $2: media, $3: max
    cat >"$out/$1.yaml" <<YAML
version: 1
name: $1
source:
  file: $2
stages:
  - delay: { initial: 0s, max: $3 }
sinks:
  - null: {}
YAML
}
pipeline delay-1h "$adts" 1h
pipeline delay-1s "$adts" 1s
pipeline delay-1h-m4a "$m4a" 1h

# The delay stage must take the media encoded, and say so to its appsrc.
GST_DEBUG=appsrc:5 timeout -s INT 3 "$castline" run "$out/delay-1s.yaml" >"$out/caps-check.log" 2>&1 || true
if grep -q 'stage-delay0-audio-playout.*setting caps to audio/mpeg' "$out/caps-check.log"; then
    caps_note="the delay stage takes the AAC encoded (its appsrc carries audio/mpeg)"
else
    caps_note="WARNING: the delay stage's appsrc did not carry audio/mpeg (see $out/caps-check.log)"
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
                # The first RSS sampled after the event was written: before it, start-up
                # allocates in bursts; after it, the push adds ~13 MB/s (0.3 MB in 20 ms).
                first_unit = wall(event["ts"])
                after = [rss for at, rss in rss_history if at >= first_unit]
                first_unit_rss = after[0] if after else figures.get("VmRSS", 0)
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
echo "delay history benchmark: 1 h of 128 kbps AAC, $rounds round(s); castline: $castline; logs: $out"
echo "held: $adts_bytes bytes of ADTS frames ($m4a_bytes without headers, in the .m4a); raw PCM (s16le): $pcm_bytes bytes"
echo "$caps_note"

# castline with `max: 1h` until it holds the hour: push speed and RSS growth. $1 run, $2 pipeline.
castline_hour() {
    rm -f "$out/$1.jsonl"
    python3 "$out/monitor.py" full 300 "$out/$1.log" "$out/$1.jsonl" -- \
        "$castline" run "$out/$2.yaml" --stats-json "$out/$1.jsonl" >"$out/$1.fig"
    local hold push base peak
    hold=$(figure hold_s "$out/$1.fig"); push=$(figure push_x "$out/$1.fig")
    base=$(figure first_unit_rss_kb "$out/$1.fig"); peak=$(figure peak_kb "$out/$1.fig")
    if [[ -n $hold && -n $push && -n $base ]]; then
        printf '%d\t%s\t%s\t%s\t%d\t-\n' "$r" "$3" "$hold" "$push" $((peak - base)) >>"$results"
        printf '  round %d  %-18s held the hour %6.2f s after its first unit (%6.1fx real time)  RSS %d -> %d MB (+%.1f MB)\n' \
            "$r" "$3" "$hold" "$push" $((base / 1024)) $((peak / 1024)) "$(echo "($peak - $base) / 1024" | bc -l)"
    else
        printf '%d\t%s\t-\t-\t-\tINVALID\n' "$r" "$3" >>"$results"
        echo "  round $r  $3 did not hold the hour (available $(figure available_s "$out/$1.fig") s); see $out/$1.log"
    fi
}

queue_unlimited="queue max-size-buffers=0 max-size-bytes=0 max-size-time=0"
queue_1s="queue max-size-buffers=0 max-size-bytes=0 max-size-time=1000000000"
for ((r = 1; r <= rounds; r++)); do
    castline_hour "r$r-castline" delay-1h castline
    hold=$(sed -n 's/^hold_s=//p' "$out/r$r-castline.fig")
    # castline holding 1 s, for as long as the hour took: what grows besides the history.
    rm -f "$out/r$r-castline-1s.jsonl"
    python3 "$out/monitor.py" "for=${hold:-10}" 300 "$out/r$r-castline-1s.log" "$out/r$r-castline-1s.jsonl" -- \
        "$castline" run "$out/delay-1s.yaml" --stats-json "$out/r$r-castline-1s.jsonl" >"$out/r$r-castline-1s.fig"
    base1=$(figure first_unit_rss_kb "$out/r$r-castline-1s.fig"); peak1=$(figure peak_kb "$out/r$r-castline-1s.fig")
    if [[ -n $base1 ]]; then
        printf '%d\tcastline-max-1s\t-\t-\t%d\t-\n' "$r" $((peak1 - base1)) >>"$results"
        printf '  round %d  %-18s RSS %d -> %d MB (+%.1f MB) over the same time\n' \
            "$r" castline-max-1s $((base1 / 1024)) $((peak1 / 1024)) "$(echo "($peak1 - $base1) / 1024" | bc -l)"
    fi
    castline_hour "r$r-castline-m4a" delay-1h-m4a castline-m4a
    # Peers: push time (demux and parse only).
    timed "r$r-ffmpeg-copy" ffmpeg -nostdin -v error -i "$adts" -c copy -f null -
    timed "r$r-gst-parse" gst-launch-1.0 -q filesrc location="$adts" ! aacparse ! fakesink sync=false
    for tool in ffmpeg-copy gst-parse; do
        read -r wall rss <"$out/r$r-$tool.time" || { wall=0 rss=0; }
        speed=$(awk -v w="$wall" 'BEGIN { print (w > 0 ? 3600 / w : 0) }')
        printf '%d\t%s\t%s\t%.1f\t-\t-\n' "$r" "$tool" "$wall" "$speed" >>"$results"
        printf '  round %d  %-18s pushed the hour in %6.2f s (%6.1fx real time)\n' "$r" "$tool" "$wall" "$speed"
    done
    # Peer: the hour held as GstBuffers in a queue, against the same line with a 1 s queue.
    python3 "$out/monitor.py" stable 120 "$out/r$r-gst-queue.log" - -- \
        gst-launch-1.0 -q filesrc location="$adts" ! aacparse ! $queue_unlimited ! fakesink sync=true \
        >"$out/r$r-gst-queue.fig"
    stable=$(figure stable_after_s "$out/r$r-gst-queue.fig")
    python3 "$out/monitor.py" "for=${stable:-10}" 120 "$out/r$r-gst-queue-1s.log" - -- \
        gst-launch-1.0 -q filesrc location="$adts" ! aacparse ! $queue_1s ! fakesink sync=true \
        >"$out/r$r-gst-queue-1s.fig"
    gpeak=$(figure peak_kb "$out/r$r-gst-queue.fig"); gpeak1=$(figure peak_kb "$out/r$r-gst-queue-1s.fig")
    printf '%d\tgst-queue-1h\t-\t-\t%d\t-\n' "$r" $((gpeak - gpeak1)) >>"$results"
    printf '  round %d  %-18s peak RSS %d MB, with a 1 s queue %d MB (+%.1f MB for the hour)\n' \
        "$r" gst-queue-1h $((gpeak / 1024)) $((gpeak1 / 1024)) "$(echo "($gpeak - $gpeak1) / 1024" | bc -l)"
done

awk -F'\t' -v held="$adts_bytes" -v m4aheld="$m4a_bytes" -v pcm="$pcm_bytes" '
function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
    return n == 0 ? 0 : (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
}
function verdict(ok) { return ok ? "PASS" : "MISS" }
function mb(bytes) { return bytes / 1048576 }
NR > 1 && $6 != "INVALID" {
    if ($3 != "-") wall[$2] = wall[$2] " " $3
    if ($4 != "-") speed[$2] = speed[$2] " " $4
    if ($5 != "-") growth[$2] = growth[$2] " " $5
}
END {
    g = median(growth["castline"]) * 1024; x = median(speed["castline"]); h = median(wall["castline"])
    gm = median(growth["castline-m4a"]) * 1024; xm = median(speed["castline-m4a"])
    g1 = median(growth["castline-max-1s"]) * 1024; q = median(growth["gst-queue-1h"]) * 1024
    fc = (x > 0 ? 3600 / x : 0); fm = (xm > 0 ? 3600 / xm : 0)
    printf "\n%-26s %10s %12s %15s\n", "tool", "push s", "x real time", "RSS growth MB"
    printf "%-26s %10.2f %12.1f %15.1f\n", "castline max 1h (ADTS)", fc, x, mb(g)
    printf "%-26s %10s %12s %15.1f\n", "castline max 1s (ADTS)", "", "", mb(g1)
    printf "%-26s %10.2f %12.1f %15.1f\n", "castline max 1h (m4a)", fm, xm, mb(gm)
    printf "%-26s %10.2f %12.1f %15s\n", "ffmpeg -c copy (ADTS)", median(wall["ffmpeg-copy"]), median(speed["ffmpeg-copy"]), ""
    printf "%-26s %10.2f %12.1f %15s\n", "gst-launch aacparse", median(wall["gst-parse"]), median(speed["gst-parse"]), ""
    printf "%-26s %10s %12s %15.1f\n\n", "gst-launch queue 1h", "", "", mb(q)
    if (g == 0) { print "castline: no valid run"; exit }
    printf "encoded bytes held %.1f MB (ADTS frames), raw PCM %.1f MB\n", mb(held), mb(pcm)
    printf "castline RSS growth / encoded bytes held = %.3f; target <= 1.20: %s\n", g / held, verdict(g / held <= 1.2)
    printf "castline RSS growth / raw PCM bytes = %.3f (expected about 0.09)\n", g / pcm
    printf "castline push = %.1fx real time; target >= 100: %s\n", x, verdict(x >= 100)
    printf "castline held the hour %.1f s after its first unit (from once-a-second samples)\n", h
    if (median(wall["ffmpeg-copy"]) > 0)
        printf "castline push time / ffmpeg -c copy = %.2f (%.2f s vs %.2f s)\n", fc / median(wall["ffmpeg-copy"]), fc, median(wall["ffmpeg-copy"])
    if (median(wall["gst-parse"]) > 0)
        printf "castline push time / gst-launch aacparse = %.2f\n", fc / median(wall["gst-parse"])
    if (q > 0) printf "castline RSS growth / gst-launch 1 h queue of GstBuffers = %.3f  [diagnostic]\n", g / q
    if (g1 > 0) printf "castline RSS growth besides the history (max 1s run) = %.1f MB  [diagnostic]\n", mb(g1)
    if (gm > 0) printf "castline RSS growth / encoded bytes, from .m4a (qtdemux index included) = %.3f  [diagnostic]\n", gm / m4aheld
}' "$results" | tee "$out/summary.txt"
echo "(medians over rounds; castline's push s is 3600 s over its push speed, the slope of available delay over wall time)"
grep -q "no valid run" "$out/summary.txt" && exit 1
exit 0
