# Sourced by the benchmarks in bench/ (not run by run-all.sh: it only runs bench/*.sh).
# Sets `here`, `root` and `castline`: CASTLINE, or .build/release/castline (what `make
# bench` builds); a relative path is relative to where we were started, else to the repo.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/.." && pwd)
castline=${CASTLINE:-.build/release/castline}
if [[ $castline != /* ]]; then
    if [[ -x $PWD/$castline ]]; then castline=$PWD/$castline; else castline=$root/$castline; fi
fi

# Serves folder $1 over HTTP on a free loopback port (its log in $2) until the script exits,
# and waits until $3 (a file in it) is served. Sets `served` to http://127.0.0.1:PORT.
serve_folder() {
    local folder=$1 log=$2 probe=$3 port
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 -m http.server "$port" --bind 127.0.0.1 --directory "$folder" >"$log" 2>&1 &
    server_pid=$!
    trap 'kill "$server_pid" 2>/dev/null || true' EXIT
    trap 'exit 130' INT TERM
    for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$port/$probe" >/dev/null 2>&1 && break; sleep 0.1; done
    curl -fsS "http://127.0.0.1:$port/$probe" >/dev/null || { echo "the HTTP server did not start" >&2; exit 2; }
    served=http://127.0.0.1:$port
}

# The picture a gst-launch line can draw, as castline's own (`castline-plain` in the CPU benches):
# the caption still, top left; no beep, flash or clock stripe. Writes a pipeline file to $1 with
# the encode stage's options $2 and the sink $3 (a YAML flow map).
plain_pipeline() {
    cat >"$1" <<EOF
version: 1
name: plain
source:
  test:
    clock: false
    video: {caption: still}
    audio: {beep: 0s}
stages:
  - encode: $2
sinks:
  - $3
EOF
}
# The same caption for a gst-launch line (timeoverlay, where castline's test source draws its own).
plain_caption='timeoverlay font-desc=Monospace\ 15 shaded-background=true draw-outline=false draw-shadow=false halignment=position valignment=position xpos=0.02 ypos=0.05 text=2026-11-21\ 12:00:00.000\ UTC\ \ \ frame'
