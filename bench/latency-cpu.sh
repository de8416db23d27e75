#!/usr/bin/env bash
# The cost of the latency stage: a listener-shaped 720p30 pipeline (the test signal,
# x264 + AAC, then decoded as a player would) run with and without a latency stage
# reading the clock back from the decoded picture and sound. Prints CPU seconds of each
# and what the stage adds as a share of one core; exits non-zero over the 2 % budget.
#
#   usage: bench/latency-cpu.sh [SECONDS] [ROUNDS]     (defaults: 20 s, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
source "$(dirname "$0")/lib/cpu-pair.bash"

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

pipeline without > "$work/without.yaml"
pipeline with > "$work/with.yaml"
cpu_pair "$work/without.yaml" "$work/with.yaml" "the latency stage"
share=$(echo "($total_with - $total_without) / ($ROUNDS * $SECONDS_PER_RUN) * 100" | bc -l)
printf 'latency stage: %.2f %% of one core on 720p30 (without %.2f s, with %.2f s CPU over %d runs of %d s; budget %d %%)\n' \
  "$share" "$total_without" "$total_with" "$ROUNDS" "$SECONDS_PER_RUN" "$BUDGET_PERCENT"
awk -v s="$share" -v b="$BUDGET_PERCENT" 'BEGIN { exit (s <= b) ? 0 : 1 }'
