# Sourced by benchmarks that publish: `castline ingest` in the background, its
# URLs read from what it prints. Needs `castline`, `out` and `die` set first.
# Sets rtmp_base (rtmp://HOST:PORT/live) and hls_base (http://HOST:PORT/hls).
ingest_pid=
cleanup() {
    if [[ -n $ingest_pid ]] && kill -0 "$ingest_pid" 2>/dev/null; then
        kill -TERM "$ingest_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$ingest_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$ingest_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# (Re)starts the ingest and reads its URLs. Restarted if something stops it
# between runs (the run it died under is INVALID).
ingests=0
start_ingest() {
    cleanup
    ingests=$((ingests + 1))
    local log=$out/ingest-$ingests
    "$castline" ingest >"$log.out" 2>"$log.err" &
    ingest_pid=$!
    rtmp_base= hls_base=
    local line hls
    for _ in $(seq 300); do
        if line=$(grep -m1 '^rtmp publish:' "$log.out" 2>/dev/null) && [[ -n $line ]] &&
           hls=$(grep -m1 '^hls playback:' "$log.out" 2>/dev/null) && [[ -n $hls ]]; then
            rtmp_base=$(awk '{print $3}' <<<"$line"); rtmp_base=${rtmp_base%/<key>}
            hls_base=$(awk '{print $3}' <<<"$hls"); hls_base=${hls_base%/<key>.m3u8}
            return 0
        fi
        kill -0 "$ingest_pid" 2>/dev/null || { cat "$log.err" >&2; die "castline ingest exited"; }
        sleep 0.1
    done
    cat "$log.err" >&2; die "castline ingest printed no URLs in 30 s"
}
