# Sourced by benchmarks that compare one pipeline with and without a part: runs
# `castline run FILE --duration SECONDS` for each, ROUNDS times, alternating which goes
# first so warm-up and background load fall on both sides, and prints each round.
# Sourced right after `cd` to the repo (the script's own arguments are SECONDS and ROUNDS);
# sets BIN, SECONDS_PER_RUN, ROUNDS, BUDGET_PERCENT and a scratch folder `work`; cpu_pair
# sets total_without and total_with (CPU seconds, user + system).
SECONDS_PER_RUN=${1:-20}
ROUNDS=${2:-3}
BIN=${CASTLINE_BIN:-${CASTLINE:-.build/release/castline}}
BUDGET_PERCENT=${BUDGET_PERCENT:-2}
[ -x "$BIN" ] || { echo "build castline first (make release), or set CASTLINE_BIN" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpu_of() {
  /usr/bin/time -f "%U %S" -o "$work/time" "$BIN" run "$1" --duration "${SECONDS_PER_RUN}s" >/dev/null 2>&1
  awk '{ print $1 + $2 }' "$work/time"
}

# usage: cpu_pair WITHOUT.yaml WITH.yaml "what the part is"
cpu_pair() {
  total_without=0
  total_with=0
  local round a b
  for round in $(seq "$ROUNDS"); do
    if (( round % 2 )); then
      a=$(cpu_of "$1"); b=$(cpu_of "$2")
    else
      b=$(cpu_of "$2"); a=$(cpu_of "$1")
    fi
    echo "round $round: without $3 ${a} s CPU, with $3 ${b} s CPU"
    total_without=$(echo "$total_without + $a" | bc -l)
    total_with=$(echo "$total_with + $b" | bc -l)
  done
}
