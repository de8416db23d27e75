#!/usr/bin/env bash
# Soak: castline listening and broadcasting for SOAK_SECONDS (an hour) side by side.
#
#   listener     `castline listen HLS --delay 10s --max-delay 2m --audio-only --output null`
#                of a live tone ffmpeg publishes to ingest A (left alone): the HLS client,
#                the delay stage (its history full after 2 min, so later growth is not history)
#   broadcaster  `castline broadcast RTMP --size 640x360` to ingest B, which is stopped and
#                started again on the same ports RECONNECTS times (30): each must resume
#
# Every 10 s each castline's resident memory, open file descriptors and threads are read
# from /proc (samples.tsv in BENCH_OUT). Prints the curve every 5 minutes, then the verdicts:
# RSS growth after the first 5 minutes < 5 %, fds and threads at the end = at 5 minutes
# (give or take the connections of the moment), every forced reconnect resumed, both exit 0.
#
#   usage: bench/soak.sh       SOAK_SECONDS=3600 RECONNECTS=30 BENCH_OUT=DIR (defaults: 1 h, 30, a new /tmp dir)
set -euo pipefail
cd "$(dirname "$0")/.."
SOAK_SECONDS=${SOAK_SECONDS:-3600}
RECONNECTS=${RECONNECTS:-30}
castline=$(realpath "${CASTLINE:-.build/release/castline}")
[ -x "$castline" ] || { echo "build castline first (make release), or set CASTLINE" >&2; exit 2; }
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-soak.XXXXXX)}
mkdir -p "$out"
die() { echo "soak: $*" >&2; exit 2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

pids=() ingest_b=
stop_all() {
    for pid in "${pids[@]}" $ingest_b; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}" $ingest_b; do for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; kill -KILL "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT
trap 'exit 130' INT TERM

# Starts `castline ingest` with fixed ports; echoes its pid. $1: a name, $2 $3 $4: rtmp, rtmps, http ports.
start_ingest() {
    "$castline" ingest --rtmp-port "$2" --rtmps-port "$3" --http-port "$4" >"$out/ingest-$1.out" 2>>"$out/ingest-$1.err" &
    local pid=$!
    for _ in $(seq 300); do
        grep -q '^hls playback:' "$out/ingest-$1.out" 2>/dev/null && { echo "$pid"; return 0; }
        kill -0 "$pid" 2>/dev/null || die "ingest $1 exited: $(tail -2 "$out/ingest-$1.err")"
        sleep 0.1
    done
    die "ingest $1 printed no URLs in 30 s"
}
stop_ingest() {
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
}

a_ports=($(free_port) $(free_port) $(free_port))
b_ports=($(free_port) $(free_port) $(free_port))
ingest_a=$(start_ingest a "${a_ports[@]}"); pids+=("$ingest_a")
ingest_b=$(start_ingest b "${b_ports[@]}")

ffmpeg -v error -re -f lavfi -i sine=frequency=1000:sample_rate=48000 -t "$((SOAK_SECONDS + 120))" \
    -c:a aac -b:a 128k -f flv "rtmp://127.0.0.1:${a_ports[0]}/live/soak" 2>"$out/ffmpeg.err" &
pids+=($!)
for _ in $(seq 300); do
    [ "$(grep -c '^#EXTINF' <(curl -sf "http://127.0.0.1:${a_ports[2]}/hls/soak.m3u8") 2>/dev/null)" -ge 3 ] && break
    sleep 0.1
done

"$castline" listen "http://127.0.0.1:${a_ports[2]}/hls/soak.m3u8" --delay 10s --max-delay 2m --audio-only \
    --output null >/dev/null 2>"$out/listen.err" &
listener=$!; pids+=("$listener")
CASTLINE_SOAK_KEY=$RANDOM$RANDOM "$castline" broadcast "rtmp://127.0.0.1:${b_ports[0]}/live" \
    --key-env CASTLINE_SOAK_KEY --size 640x360 >/dev/null 2>"$out/broadcast.err" &
broadcaster=$!; pids+=("$broadcaster")

sample() {  # $1: seconds since start
    local line="$1"
    for pid in "$listener" "$broadcaster"; do
        local rss fds threads
        rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        threads=$(awk '/^Threads:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        fds=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
        line+=$'\t'"$rss"$'\t'"$fds"$'\t'"$threads"
    done
    echo "$line" >> "$out/samples.tsv"
}
printf 't_s\tlisten_rss_kb\tlisten_fds\tlisten_threads\tbroadcast_rss_kb\tbroadcast_fds\tbroadcast_threads\n' > "$out/samples.tsv"

every=$((SOAK_SECONDS / (RECONNECTS + 1)))
started=$(date +%s)
next_sample=0 next_cut=$every cuts=0 resumed=0
echo "soak: $SOAK_SECONDS s, $RECONNECTS forced reconnects (every $every s), output in $out"
while :; do
    now=$(( $(date +%s) - started ))
    (( now >= SOAK_SECONDS )) && break
    kill -0 "$listener" 2>/dev/null || { echo "soak: the listener exited early"; break; }
    kill -0 "$broadcaster" 2>/dev/null || { echo "soak: the broadcaster exited early"; break; }
    if (( now >= next_sample )); then
        sample "$now"
        (( now % 300 < 10 )) && awk -F'\t' -v t="$now" 'END { printf "  %5d s  listen %6.1f MB %3d fds %3d threads | broadcast %6.1f MB %3d fds %3d threads\n", t, $2/1024, $3, $4, $5/1024, $6, $7 }' "$out/samples.tsv"
        next_sample=$((next_sample + 10))
    fi
    if (( cuts < RECONNECTS && now >= next_cut )); then
        stop_ingest "$ingest_b"; sleep 3
        ingest_b=$(start_ingest b "${b_ports[@]}")
        cuts=$((cuts + 1)); next_cut=$((next_cut + every))
        for _ in $(seq 600); do
            [ "$(grep -c 'reconnected after' "$out/broadcast.err")" -ge "$cuts" ] && { resumed=$((resumed + 1)); break; }
            sleep 0.1
        done
    fi
    sleep 1
done
sample "$(( $(date +%s) - started ))"
kill -INT "$listener" "$broadcaster" 2>/dev/null || true
listen_status=0 broadcast_status=0
wait "$listener" || listen_status=$?
wait "$broadcaster" || broadcast_status=$?
stop_ingest "$ingest_b"

python3 - "$out/samples.tsv" "$cuts" "$resumed" "$listen_status" "$broadcast_status" "$out" <<'PY'
import sys
path, cuts, resumed, listen_status, broadcast_status, out = sys.argv[1:]
rows = [list(map(int, line.split("\t"))) for line in open(path).read().splitlines()[1:]]
base = next((r for r in rows if r[0] >= 300), rows[0])
last = rows[-1]
for name, col in (("listen", 1), ("broadcast", 4)):
    growth = 100 * (last[col] - base[col]) / base[col]
    peak = max(r[col] for r in rows[rows.index(base):])
    print(f"{name:9} RSS at {base[0]} s {base[col]/1024:.1f} MB, at {last[0]} s {last[col]/1024:.1f} MB "
          f"({growth:+.1f} %, peak {peak/1024:.1f} MB): {'PASS' if growth < 5 else 'MISS'} (< 5 %)")
    print(f"{name:9} fds {base[col+1]} -> {last[col+1]}, threads {base[col+2]} -> {last[col+2]} "
          f"(max {max(r[col+1] for r in rows)} fds, {max(r[col+2] for r in rows)} threads)")
print(f"reconnects: {cuts} forced, {resumed} resumed: {'PASS' if cuts == resumed else 'MISS'}")
print(f"exit: listen {listen_status}, broadcast {broadcast_status}; samples in {path}")
PY
grep -E "summary|reconnects" "$out/broadcast.err" | tail -3
grep -E "summary|reconnects" "$out/listen.err" | tail -2
