#!/usr/bin/env bash
# Glass-to-glass latency on loopback, WebRTC against RTMP→HLS, in one run: `castline latency`
# through WHIP → aiortc (relaying, as a server does; Tests/EndToEndTests/Support/whip_server.py)
# → WHEP, then through a local ingest (nginx-rtmp → HLS, `castline latency --local`), each for
# SECONDS. Prints the median and p95 of the per-second figures, sound and picture, and their
# ratio. Needs .venv (aiortc), as `make test` makes it.
#
#   usage: bench/webrtc-latency.sh [SECONDS]     (default: 60)
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
seconds=${1:-60}
python=$root/.venv/bin/python
[ -x "$python" ] || { echo "no $python: run make test-deps (aiortc) first" >&2; exit 2; }
work=$(mktemp -d)
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$python" "$root/Tests/EndToEndTests/Support/whip_server.py" "$port" "$work" 2>"$work/server.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q ready "$work/server.log" && break; sleep 0.1; done
grep -q ready "$work/server.log" || { echo "the WHIP/WHEP endpoint did not start" >&2; exit 2; }

"$castline" latency "http://127.0.0.1:$port/whip" --play "http://127.0.0.1:$port/whep" --duration "${seconds}s" \
    >"$work/webrtc.log" 2>&1 || { cat "$work/webrtc.log" >&2; exit 2; }
"$castline" latency --local --duration "${seconds}s" >"$work/hls.log" 2>&1 || { cat "$work/hls.log" >&2; exit 2; }

# The per-second lines ("latency: sound 0.354 s, picture 0.290 s, …"): median and p95 of each.
figures() {  # $1: log, $2: sound or picture
    grep -o "$2 [0-9.]* s" "$1" | awk '{ print $2 }' | sort -n | awk '
        { v[NR] = $1 }
        END { if (NR == 0) { print "- - 0"; exit }
              m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              p = v[int(0.95 * NR + 0.999)]; print m, p, NR }'
}
printf '%-22s %-8s %10s %10s %6s\n' path stream median_s p95_s reads
for path in webrtc hls; do
    for stream in sound picture; do
        read -r median p95 count < <(figures "$work/$path.log" "$stream")
        printf '%-22s %-8s %10s %10s %6s\n' "$([ $path = webrtc ] && echo 'WHIP->aiortc->WHEP' || echo 'RTMP->nginx->HLS')" \
            "$stream" "$median" "$p95" "$count"
        eval "${path}_${stream}=$median"
    done
done
awk -v w="$webrtc_picture" -v h="$hls_picture" 'BEGIN { if (h > 0) printf "picture, WebRTC / HLS: %.3f\n", w / h }'
