#!/usr/bin/env bash
# `make bench`: runs every benchmark in bench/ (each bench/*.sh but this one), one
# after another. Benchmarks report figures and exit 0 whether or not a target is
# met; this fails only if a benchmark could not run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
status=0
for bench in "$here"/*.sh; do
    [[ $(basename "$bench") == run-all.sh ]] && continue
    echo "=== $(basename "$bench")"
    "$bench" || { echo "=== $(basename "$bench") could not run (exit $?)"; status=1; }
    echo
done
exit $status
