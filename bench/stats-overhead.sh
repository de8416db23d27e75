#!/usr/bin/env bash
# The cost of stats taps: a 720p30 broadcast-shaped pipeline (test pattern + tone,
# x264 + AAC, to null) run with and without a stats stage on every stream, both
# before and after encoding. Prints CPU seconds of each and the growth in percent;
# exits non-zero when stats cost more than the 2 % budget.
#
#   usage: bench/stats-overhead.sh [SECONDS] [ROUNDS]     (defaults: 20 s, 3 rounds)
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-20}
ROUNDS=${2:-3}
BIN=${CASTLINE_BIN:-${CASTLINE:-.build/release/castline}}
BUDGET_PERCENT=${BUDGET_PERCENT:-2}
[ -x "$BIN" ] || { echo "build castline first (swift build), or set CASTLINE_BIN" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

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

# CPU seconds (user + system) of one run.
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
  echo "round $round: without stats ${a} s CPU, with stats ${b} s CPU"
  total_without=$(echo "$total_without + $a" | bc -l)
  total_with=$(echo "$total_with + $b" | bc -l)
done
growth=$(echo "($total_with - $total_without) * 100 / $total_without" | bc -l)
printf "stats overhead: %.2f %% CPU (%s s → %s s over %d rounds of %d s; budget %d %%)\n" \
  "$growth" "$total_without" "$total_with" "$ROUNDS" "$SECONDS_PER_RUN" "$BUDGET_PERCENT"
awk -v g="$growth" -v b="$BUDGET_PERCENT" 'BEGIN { exit (g <= b) ? 0 : 1 }'
