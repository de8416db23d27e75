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
