#!/usr/bin/env bash
# Benchmark: the same load test run twice against one live stream (the local ingest, as
# load-many.sh makes it): VIEWERS viewers from one process, then the same viewers split over
# SHARDS processes (`--shard /SHARDS`, JOB_COMPLETION_INDEX set in each, as a Kubernetes Indexed
# Job runs them), each serving `--metrics`, scraped each second by a real Prometheus (Debian's).
# Prints the one process's totals (its last --stats-json line) beside the fleet's as Prometheus
# sums them, read at the fleet's last full second. Reports, does not assert.
#
# The defaults are issue #33's: `load URL --viewers 1000 --ramp 100/s --duration 2m`.
# Environment: CASTLINE (default .build/release/castline), VIEWERS (default 1000), SHARDS
# (default 4), RAMP (default 100/s), DURATION (default 120), BENCH_OUT (default a new temp dir).
set -euo pipefail

source "$(dirname "$0")/lib/common.bash"
viewers=${VIEWERS:-1000}
shards=${SHARDS:-4}
duration=${DURATION:-120}
ramp=${RAMP:-100/s}
out=${BENCH_OUT:-$(mktemp -d /tmp/castline-bench.XXXXXX)}
mkdir -p "$out"
die() { echo "load-fleet: $*" >&2; exit 2; }
[[ -x $castline ]] || die "no castline binary at $castline (build it, or set CASTLINE)"
[[ -x /usr/bin/prometheus ]] || die "/usr/bin/prometheus is missing (apt-get install prometheus)"
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

source "$here/lib/ingest.bash"
start_ingest
publish_light fleet
prometheus_pid=
trap 'kill "$publisher" $prometheus_pid 2>/dev/null || true; cleanup' EXIT
load=("$castline" load "$url" --viewers "$viewers" --ramp "$ramp" --duration "${duration}s")

echo "load-fleet: one process, $viewers viewers at $ramp, held $duration s after the ramp; logs in $out"
"${load[@]}" --stats-json "$out/one.jsonl" >/dev/null 2>"$out/one.err" || echo "castline exited $? (see $out/one.err)"

ports=() targets=()
for _ in $(seq "$shards"); do port=$(free_port); ports+=("$port"); targets+=("\"127.0.0.1:$port\""); done
prometheus_port=$(free_port)
cat >"$out/prometheus.yml" <<EOF
global: { scrape_interval: 1s }
scrape_configs:
  - job_name: castline-load
    static_configs: [{ targets: [$(IFS=,; echo "${targets[*]}")] }]
EOF
/usr/bin/prometheus --config.file="$out/prometheus.yml" --storage.tsdb.path="$out/tsdb" \
    --web.listen-address="127.0.0.1:$prometheus_port" >"$out/prometheus.log" 2>&1 &
prometheus_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$prometheus_port/-/ready" >/dev/null 2>&1 && break; sleep 0.2; done

echo "load-fleet: $shards shards of the same $viewers viewers, scraped by Prometheus"
pids=()
for index in $(seq 0 $((shards - 1))); do
    JOB_COMPLETION_INDEX=$index "${load[@]}" --shard "/$shards" --metrics "127.0.0.1:${ports[$index]}" \
        --stats-json "$out/shard-$index.jsonl" >/dev/null 2>"$out/shard-$index.err" &
    pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid" || echo "a shard exited $? (see $out/shard-*.err)"; done

python3 - "$out" "$prometheus_port" "$shards" <<'PY'
import glob, json, sys, urllib.parse, urllib.request
from datetime import datetime
out, port, shards = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def last(path):
    return [json.loads(l) for l in open(path) if '"load"' in l][-1]
one = last(f"{out}/one.jsonl")
# The fleet's last second in which every shard was still served: its shards' last readings, the earliest of them.
ends = [datetime.fromisoformat(last(p)["ts"].replace("Z", "+00:00")).timestamp() for p in glob.glob(f"{out}/shard-*.jsonl")]
at = min(ends) - 1
def query(expression):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expression, "time": at})
    result = json.load(urllib.request.urlopen(url))["data"]["result"]
    # A sum over counters none of the shards made (no HTTP error at all) is empty: none.
    return float(result[0]["value"][1]) if result else 0.0 if expression.startswith("sum") else float("nan")
fleet = {
    "viewers_started": query('sum(castline_load_viewers{state="started"})'),
    "viewers_failed": query('sum(castline_load_viewers{state="failed"})'),
    "stalls": query("sum(castline_load_stalls_total)"),
    "http_errors": query("sum(castline_load_http_errors_total)"),
    "ttff_p95_s": query("histogram_quantile(0.95, sum by (le) (castline_load_ttff_seconds_bucket))"),
    "fetch_p95_s": query("histogram_quantile(0.95, sum by (le) (castline_load_segment_fetch_seconds_bucket))"),
    "latency_p95_s": query("histogram_quantile(0.95, sum by (le) (castline_load_viewers_behind_live_seconds))"),
}
print(f"{'':16} {'one process':>14} {f'{shards} shards (Prometheus)':>24}")
def shown(value, width):
    return f"{value:{width}.3f}" if value == value else f"{'—':>{width}}"  # NaN: not measured (no programme times)
for key, value in fleet.items():
    print(f"{key:16} {shown(one.get(key, float('nan')), 14)} {shown(value, 24)}")
print("(the fleet's percentiles are histogram buckets' bounds, interpolated; the one process's are exact)")
PY
echo "one process:  $(grep '^summary:' "$out/one.err" || echo 'no summary (see one.err)')"
for index in $(seq 0 $((shards - 1))); do echo "shard $index:      $(grep '^summary:' "$out/shard-$index.err" || echo 'no summary')"; done
