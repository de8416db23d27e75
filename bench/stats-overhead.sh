#!/usr/bin/env bash
# The cost of stats taps: a 720p30 broadcast-shaped pipeline (test pattern + tone,
# x264 + AAC, to null) run with and without a stats stage on every stream, both
# before and after encoding. Prints CPU seconds of each and the growth in percent;
# exits non-zero when stats cost more than the 2 % budget.
#
#   usage: bench/stats-overhead.sh [SECONDS] [ROUNDS]     (defaults: 20 s, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
source "$(dirname "$0")/lib/cpu-pair.bash"

pipeline() {  # $1: "with" or "without" stats stages
  local stats_raw="" stats_encoded=""
  if [ "$1" = with ]; then
    stats_raw="  - stats: { name: raw }"
    stats_encoded="  - stats: { name: encoded }"
  fi
  cat <<YAML
version: 1
name: stats-overhead-$1
source:
  test:
    video: { width: 1280, height: 720, fps: 30 }
    audio: { tone: 440 }
stages:
$stats_raw
  - encode:
      video: { bitrate: 2500k, keyframe-interval: 2s }
      audio: { codec: aac, bitrate: 128k }
$stats_encoded
sinks:
  - null: {}
YAML
}

pipeline without > "$work/without.yaml"
pipeline with > "$work/with.yaml"
cpu_pair "$work/without.yaml" "$work/with.yaml" "stats"
growth=$(echo "($total_with - $total_without) * 100 / $total_without" | bc -l)
printf "stats overhead: %.2f %% CPU (%s s → %s s over %d rounds of %d s; budget %d %%)\n" \
  "$growth" "$total_without" "$total_with" "$ROUNDS" "$SECONDS_PER_RUN" "$BUDGET_PERCENT"
awk -v g="$growth" -v b="$BUDGET_PERCENT" 'BEGIN { exit (g <= b) ? 0 : 1 }'
