#!/usr/bin/env bash
# Benchmark: CPU cost of a WHIP broadcast (issue #31), castline against the hand-written
# webrtcbin peer (bench/whip_webrtcbin.c, built here with gcc), one after the other, each
# for DURATION s, ROUNDS times (the order alternates), to aiortc playing the WHIP endpoint
# (Tests/EndToEndTests/Support/whip_server.py from the tests' .venv: `make test-deps`).
#
#   castline-plain  castline run: the picture a gst-launch line can draw (caption still, no beep,
#                   flash or clock stripe) and the encode a WHIP broadcast asks for (x264 veryfast
#                   zerolatency 2500k CBR, one thread, a quantizer floor of 20, constrained
#                   baseline; Opus 128k), to a whip sink
#   webrtcbin       the same picture and encode, payloaded as castline does (rtph264pay
#                   zerolatency aggregation, rtpopuspay) into webrtcbin, with the least WHIP
#                   exchange (the same ECDSA certificate trick castline needs for aiortc)
#   castline-rtmp   castline-plain's video encode with AAC 128k (what RTMP carries), published to
#                   `castline ingest` (nginx-rtmp): what the same broadcast costs over RTMP
# Each whole process under /usr/bin/time: user+sys CPU seconds per second of media aiortc received
# (its pictures counted, 30 a second: the two start up and connect in different times, so wall
# seconds would not compare). A run is INVALID unless aiortc says it connected and counted at
# least 10 pictures a second of the run.
# castline-rtmp counts DURATION media seconds (nginx-rtmp takes the stream as it comes).
# Target: castline-plain / webrtcbin <= 1.05; castline-plain / castline-rtmp is said. Reports,
# does not assert.
#
# Environment: CASTLINE (default .build/release/castline), DURATION (default 15), ROUNDS
# (default 2), BENCH_OUT (default a new temp dir).
set -euo pipefail
source "$(dirname "$0")/lib/common.bash"
duration=${DURATION:-15}
rounds=${ROUNDS:-2}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-bench.XXXXXX)}
mkdir -p "$out"
die() { echo "whip-cpu: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ -x $root/.venv/bin/python ]] || die "no .venv with aiortc (run make test-deps)"
for tool in gcc pkg-config openssl /usr/bin/time; do command -v "$tool" >/dev/null || die "$tool is missing"; done

gcc -O2 -o "$out/whip_webrtcbin" "$here/whip_webrtcbin.c" $(pkg-config --cflags --libs gstreamer-1.0 gstreamer-sdp-1.0 libcurl) ||
    die "cannot build whip_webrtcbin.c"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$out/key.pem" -out "$out/cert.pem" \
    -days 2 -subj /CN=bench 2>/dev/null
cat "$out/cert.pem" "$out/key.pem" >"$out/dtls.pem"
fingerprint="sha-256 $(openssl x509 -in "$out/cert.pem" -noout -fingerprint -sha256 | cut -d= -f2)"

source "$here/lib/ingest.bash"
start_ingest

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$root/.venv/bin/python" "$root/Tests/EndToEndTests/Support/whip_server.py" "$port" "$out" 2>"$out/endpoint.log" &
endpoint=$!
trap 'kill "$endpoint" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 100); do grep -q ready "$out/endpoint.log" 2>/dev/null && break; sleep 0.1; done
url=http://127.0.0.1:$port/whip

pipeline="videotestsrc is-live=true pattern=smpte-rp-219 ! video/x-raw,width=1280,height=720,framerate=30/1,format=I420 ! $plain_caption
 ! x264enc tune=zerolatency speed-preset=veryfast key-int-max=60 bitrate=2500 vbv-buf-capacity=1000 threads=1 option-string=nal-hrd=cbr:filler=1:qpmin=20
 ! video/x-h264,profile=constrained-baseline ! h264parse ! rtph264pay config-interval=-1 aggregate-mode=zero-latency
 ! application/x-rtp,media=video,encoding-name=H264,payload=96,clock-rate=90000 ! webrtcbin name=w bundle-policy=max-bundle
 audiotestsrc is-live=true ! audio/x-raw,rate=48000,channels=2 ! audioconvert ! audioresample ! opusenc bitrate=128000 ! rtpopuspay
 ! application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000 ! w."
echo "$pipeline" >"$out/pipeline.txt"  # the peer's pipeline, for a profile of it alone
plain_pipeline "$out/plain.yaml" "{video: {threads: 1, qp-min: 20, profile: constrained-baseline}, audio: {codec: opus}}" \
    "whip: {url: \"$url\"}"
# The ingest's URL from the environment: a restarted ingest has ports of its own.
plain_pipeline "$out/plain-rtmp.yaml" "{video: {threads: 1, qp-min: 20, profile: constrained-baseline}, audio: {}}" \
    "rtmp: {url: \"\${BENCH_RTMP_URL}\", key: \"\${BENCH_STREAM_KEY}\"}"
export BENCH_STREAM_KEY=whip-cpu-bench

sessions=0
publish() {  # tool run
    local tool=$1 run=$2 timer=(/usr/bin/time -f '%U %S %M %e' -o "$out/$2.time")
    if [[ $tool == castline-rtmp ]]; then
        kill -0 "$ingest_pid" 2>/dev/null || start_ingest
        if BENCH_RTMP_URL=$rtmp_base "${timer[@]}" "$castline" run "$out/plain-rtmp.yaml" --duration "${duration}s" >"$out/$run.log" 2>&1 &&
           grep -q "^rtmp: published " "$out/$run.log"; then
            read -r user sys rss _ < <(tail -1 "$out/$run.time")  # after "Command exited ..." if it failed
            echo -e "$tool\t$run\t$(echo "$user + $sys" | bc)\t$rss\t$((duration * 30))" >>"$out/results.tsv"
            printf '%-15s round %s: %.2f CPU-s for %s s, peak RSS %s MB\n' "$tool" "${run##*-}" \
                "$(echo "$user + $sys" | bc)" "$duration" "$((rss / 1024))"
        else
            echo "$tool round ${run##*-}: INVALID (see $out/$run.log)"
        fi
        return
    fi
    case $tool in
        castline-plain) "${timer[@]}" "$castline" run "$out/plain.yaml" --duration "${duration}s" >"$out/$run.log" 2>&1 || true ;;
        webrtcbin) "${timer[@]}" "$out/whip_webrtcbin" "$url" "$out/dtls.pem" "$fingerprint" "$duration" "$pipeline" >"$out/$run.log" 2>&1 || true ;;
    esac
    sessions=$((sessions + 1))
    # aiortc counts the session's pictures when it closes (the DELETE at the end).
    for _ in $(seq 100); do grep -q "^video $sessions " "$out/endpoint.log" && break; sleep 0.1; done
    local frames
    frames=$(awk -v n="$sessions" '$1 == "video" && $2 == n {print $3}' "$out/endpoint.log")
    if grep -q "^connected $sessions\$" "$out/endpoint.log" && (( ${frames:-0} >= 10 * duration )); then
        read -r user sys rss _ < <(tail -1 "$out/$run.time")  # after "Command exited ..." if it failed
        echo -e "$tool\t$run\t$(echo "$user + $sys" | bc)\t$rss\t$frames" >>"$out/results.tsv"
        printf '%-15s round %s: %.2f CPU-s for %s s (%s pictures at aiortc), peak RSS %s MB\n' "$tool" "${run##*-}" \
            "$(echo "$user + $sys" | bc)" "$duration" "$frames" "$((rss / 1024))"
    else
        echo "$tool round ${run##*-}: INVALID (aiortc: connected? pictures ${frames:-none}; see $out/$run.log)"
    fi
}

echo "whip-cpu: $rounds rounds of $duration s each, to aiortc at $url; logs in $out"
for round in $(seq "$rounds"); do
    if (( round % 2 )); then order="castline-plain webrtcbin castline-rtmp"; else order="castline-rtmp webrtcbin castline-plain"; fi
    for tool in $order; do publish "$tool" "$tool-$round"; done
done

python3 - "$out/results.tsv" "$duration" <<'PY'
import statistics, sys
rows = [line.split("\t") for line in open(sys.argv[1])] if __import__("os").path.exists(sys.argv[1]) else []
cpu = {}
for tool, _, seconds, _, frames in rows:
    cpu.setdefault(tool, []).append(float(seconds) / (int(frames) / 30))
for tool, values in cpu.items():
    print(f"{tool:15} median {statistics.median(values):.3f} CPU-s per media second ({len(values)} valid runs)")
if "castline-plain" in cpu and "webrtcbin" in cpu:
    ratio = statistics.median(cpu["castline-plain"]) / statistics.median(cpu["webrtcbin"])
    print(f"castline-plain / webrtcbin: {ratio:.3f} (target <= 1.05: {'PASS' if ratio <= 1.05 else 'MISS'})")
else:
    print("castline-plain / webrtcbin: not both measured")
if "castline-plain" in cpu and "castline-rtmp" in cpu:
    # RTMP's media seconds are the run's (no receiver counts them); WHIP's, what aiortc received.
    print(f"castline-plain over WHIP / over RTMP: {statistics.median(cpu['castline-plain']) / statistics.median(cpu['castline-rtmp']):.3f}"
          " (per media second: aiortc's pictures for WHIP, the run's length for RTMP)")
PY
