#!/usr/bin/env bash
# Benchmark: VIEWERS simulated HLS viewers (`castline load`) of one live stream from one process,
# against SWARM `ffmpeg -re -i URL -c copy -f null -` processes (one per viewer, as swarms of
# ffmpeg do it), one after the other, each for DURATION s. The stream: one local ingest
# (`castline ingest`, nginx serving HLS) with ffmpeg publishing 320x180 at 200 kbit/s and AAC
# 64k: a thousand viewers of it fetch about 270 Mbit/s from nginx over loopback (of 2.5 Mbit/s,
# 2.6 Gbit/s: this machine's two cores cannot serve that, and every viewer stalls).
# Prints CPU seconds and peak RSS per viewer of each, castline's stalls and p95 fetch time, how
# late its timers fired, nginx's CPU over castline's run, and the ratios. CPU is compared per
# second watched: each of the swarm's processes watches DURATION s, each of castline's viewers
# DURATION s and what is left of the ramp after it starts (on average half the ramp).
# Reports, does not assert.
#
# Environment: CASTLINE (default .build/release/castline), VIEWERS (default 1000), SWARM (default
# 100), DURATION (default 40), BENCH_OUT (default a new temp dir).
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
viewers=${VIEWERS:-1000}
swarm=${SWARM:-100}
duration=${DURATION:-40}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-bench.XXXXXX)}
mkdir -p "$out"
die() { echo "load-many: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ -x /usr/bin/time ]] || die "/usr/bin/time is missing (apt-get install time)"

source "$here/lib/ingest.bash"
start_ingest
publish_light load
trap 'kill "$publisher" 2>/dev/null || true; cleanup' EXIT

# The origin's CPU beside castline's: nginx's processes' user and system clock ticks.
nginx_ticks() { local t=0; for p in $(pgrep -x nginx); do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
echo "load-many: castline load, $viewers viewers for $duration s after the ramp; logs in $out"
nginx_before=$(nginx_ticks)
/usr/bin/time -f '%U %S %M' -o "$out/castline.time" \
    "$castline" load "$url" --viewers "$viewers" --ramp 200/s --duration "${duration}s" --stats-json "$out/load.jsonl" \
    >/dev/null 2>"$out/castline.err" || echo "castline exited $? (see $out/castline.err)"

echo $(( $(nginx_ticks) - nginx_before )) >"$out/nginx.ticks"
echo "load-many: $swarm ffmpeg processes for $duration s"
/usr/bin/time -f '%U %S %M' -o "$out/swarm.time" bash -c '
    for _ in $(seq "$1"); do timeout -s INT "$2" ffmpeg -nostdin -v error -re -i "$3" -c copy -f null - 2>/dev/null & done
    wait' _ "$swarm" "$duration" "$url" || true
# /usr/bin/time reports the largest RSS of the waited-for processes, not their sum: ffmpeg's own is measured apart.
/usr/bin/time -f '%M' -o "$out/ffmpeg-one.rss" timeout -s INT 10 ffmpeg -nostdin -v error -re -i "$url" -c copy -f null - 2>/dev/null || true

python3 - "$out" "$viewers" "$swarm" "$duration" <<'PY'
import json, os, sys
out, viewers, swarm, duration = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ramp = (viewers - 1) / 200  # --ramp 200/s
watched = viewers * duration + sum(ramp - n / 200 for n in range(viewers))  # castline's viewer-seconds
last = [json.loads(l) for l in open(f"{out}/load.jsonl") if '"load"' in l][-1]
user, system, rss = open(f"{out}/castline.time").read().split()[-3:]
c_cpu, c_rss = float(user) + float(system), int(rss) / 1024
user, system, _ = open(f"{out}/swarm.time").read().split()[-3:]
s_cpu = float(user) + float(system)
s_rss = int(open(f"{out}/ffmpeg-one.rss").read().split()[-1]) / 1024  # after "Command exited …" (timeout's 124)
print(f"castline load: {last['viewers_started']:.0f} viewers, {last['viewers_failed']:.0f} failed, stalls {last['stalls']:.0f}, "
      f"rebuffer {last['rebuffer_ratio'] * 100:.2f} %, fetch p95 {last.get('fetch_p95_s', float('nan')):.3f} s, "
      f"first frame p95 {last.get('ttff_p95_s', float('nan')):.3f} s")
print(f"castline load: CPU {c_cpu:.1f} s ({c_cpu / viewers * 1000:.2f} ms per viewer), peak RSS {c_rss:.0f} MB "
      f"({c_rss / viewers * 1024:.0f} KB per viewer)")
lag = max(json.loads(l).get("timer_lag_ms", 0) for l in open(f"{out}/load.jsonl") if '"load"' in l)
nginx = int(open(f"{out}/nginx.ticks").read()) / os.sysconf("SC_CLK_TCK")
print(f"castline load: its timers at most {lag:.0f} ms late in any second (every viewer's fetches and play-out kept time "
      f"to that); the origin, nginx: CPU {nginx:.1f} s over the same run")
print(f"ffmpeg swarm:  CPU {s_cpu:.1f} s ({s_cpu / swarm * 1000:.2f} ms per viewer), RSS {s_rss:.0f} MB per viewer (one ffmpeg)")
print(f"per viewer, castline / ffmpeg: CPU {c_cpu / viewers / (s_cpu / swarm):.3f}, RSS {c_rss / viewers / s_rss:.3f}")
c_rate, s_rate = c_cpu / watched * 1000, s_cpu / (swarm * duration) * 1000
print(f"per second watched: castline {c_rate:.3f} ms of CPU ({watched / viewers:.1f} s each on average), ffmpeg {s_rate:.3f} ms "
      f"({duration:.0f} s each): castline / ffmpeg {c_rate / s_rate:.3f}")
PY
