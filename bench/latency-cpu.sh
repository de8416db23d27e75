#!/usr/bin/env bash
# The cost of the latency stage: a listener-shaped 720p30 pipeline (the test signal,
# x264 + AAC, then decoded as a player would) run with and without a latency stage
# reading the clock back from the decoded picture and sound. Prints CPU seconds of each
# and what the stage adds as a share of one core; exits non-zero over the 2 % budget.
#
#   usage: bench/latency-cpu.sh [SECONDS] [ROUNDS]     (defaults: 20 s, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-20}
ROUNDS=${2:-3}
BIN=${CASTLINE_BIN:-${CASTLINE:-.build/release/castline}}
BUDGET_PERCENT=${BUDGET_PERCENT:-2}
[ -x "$BIN" ] || { echo "build castline first (make release), or set CASTLINE_BIN" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pipeline() {  # $1: "with" or "without" the latency stage
  local stage=""
  [ "$1" = with ] && stage="  - latency: {}"
  cat <<YAML
version: 1
name: latency-cpu-$1
source:
  test:
    video: { width: 1280, height: 720, fps: 30 }
    audio: {}
stages:
  - encode:
      video: { bitrate: 2500k, keyframe-interval: 2s }
      audio: { codec: aac, bitrate: 128k }
$stage
sinks:
  - null: { decode: true }
YAML
}

cpu_of() {
  /usr/bin/time -f "%U %S" -o "$work/time" "$BIN" run "$1" --duration "${SECONDS_PER_RUN}s" >/dev/null 2>&1
  awk '{ print $1 + $2 }' "$work/time"
}

pipeline without > "$work/without.yaml"
pipeline with > "$work/with.yaml"
total_without=0
total_with=0
for round in $(seq "$ROUNDS"); do
  # Alternate the order so warm-up and background load fall on both sides.
  if (( round % 2 )); then
    a=$(cpu_of "$work/without.yaml"); b=$(cpu_of "$work/with.yaml")
  else
    b=$(cpu_of "$work/with.yaml"); a=$(cpu_of "$work/without.yaml")
  fi
  echo "round $round: without ${a} s CPU, with the latency stage ${b} s CPU"
  total_without=$(echo "$total_without + $a" | bc -l)
  total_with=$(echo "$total_with + $b" | bc -l)
done
share=$(echo "($total_with - $total_without) / ($ROUNDS * $SECONDS_PER_RUN) * 100" | bc -l)
printf 'latency stage: %.2f %% of one core on 720p30 (without %.2f s, with %.2f s CPU over %d runs of %d s; budget %d %%)\n' \
  "$share" "$total_without" "$total_with" "$ROUNDS" "$SECONDS_PER_RUN" "$BUDGET_PERCENT"
awk -v s="$share" -v b="$BUDGET_PERCENT" 'BEGIN { exit (s <= b) ? 0 : 1 }'
