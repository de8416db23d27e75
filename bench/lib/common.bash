# Sourced by the benchmarks in bench/ (not run by run-all.sh: it only runs bench/*.sh).
# Sets `here`, `root` and `castline`: CASTLINE, or .build/release/castline (what `make
# bench` builds); a relative path is relative to where we were started, else to the repo.
here=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
root=$(cd "$here/.." && pwd)
castline=${CASTLINE:-.build/release/castline}
if [[ $castline != /* ]]; then
    if [[ -x $PWD/$castline ]]; then castline=$PWD/$castline; else castline=$root/$castline; fi
fi
