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

# Publishes a light live stream to the ingest as key $1 (ffmpeg: 320x180 at 200 kbit/s and AAC
# 64k, 2 s segments: what a thousand load-test viewers can fetch over loopback here), and waits
# until its playlist lists 4 segments. Sets `publisher` (ffmpeg's pid) and `url` (the playlist).
publish_light() {
    ffmpeg -nostdin -v error -re -f lavfi -i testsrc2=size=320x180:rate=30 -f lavfi -i sine=frequency=1000:sample_rate=48000 \
        -c:v libx264 -preset ultrafast -tune zerolatency -b:v 200k -g 60 -c:a aac -b:a 64k \
        -f flv "$rtmp_base/$1" >"$out/publisher.log" 2>&1 &
    publisher=$!
    url=$hls_base/$1.m3u8
    for _ in $(seq 60); do
        (( $(curl -fs "$url" 2>/dev/null | grep -c EXTINF) >= 4 )) && return 0
        sleep 0.5
    done
    kill "$publisher" 2>/dev/null || true
    die "the published stream's playlist never listed 4 segments (see $out/publisher.log)"
}
