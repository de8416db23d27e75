#!/usr/bin/env bash
# Fuzzes castline's readers of network input with libFuzzer, under AddressSanitizer, each for
# ${FUZZ_SECONDS:-60} s: `playlist` (PlaylistParser) and `transport-stream` (TransportStreamFilter
# and TransportStreamHead, which see segment bytes). FUZZ_TARGETS picks (default: both).
# Each seed corpus (Fuzz/corpus/TARGET) is copied to a scratch directory, which gets the new
# entries and any crash; the repo is never written to. Exits non-zero on a crash, leak or hang.
#
#   Fuzz/run.sh                  # 60 s each
#   FUZZ_SECONDS=600 FUZZ_TARGETS=transport-stream Fuzz/run.sh
#   FUZZ_TARGETS=playlist FUZZ_SCRATCH=/tmp/f Fuzz/run.sh -runs=0 /tmp/f/crashes/crash-...   # replay one input
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
SECONDS_TO_RUN=${FUZZ_SECONDS:-60}
TARGETS=${FUZZ_TARGETS:-playlist transport-stream}

# A target's own files only: the rest of Sources/HLS needs swift-crypto, which plain swiftc cannot
# see. One module (-module-name HLS), so a harness calls the code without an import;
# -parse-as-library because libFuzzer supplies main().
sources() {
    case $1 in
        playlist) echo Sources/HLS/Playlist.swift Sources/HLS/PlaylistParser.swift Sources/HLS/AttributeList.swift \
            Fuzz/PlaylistParserFuzz/main.swift ;;
        transport-stream) echo Sources/HLS/TransportStreamHead.swift Sources/HLS/TransportStreamFilter.swift \
            Fuzz/TransportStreamFuzz/main.swift ;;
        *) echo "unknown fuzz target $1 (playlist, transport-stream)" >&2; return 2 ;;
    esac
}

fuzz() {
    local target=$1
    shift
    local bin=.build/fuzz-$target scratch=${FUZZ_SCRATCH:-$(mktemp -d -t "castline-fuzz-$target.XXXXXX")}
    local files dict=()
    files=$(sources "$target")
    mkdir -p .build
    # shellcheck disable=SC2086
    "$SWIFTC" -sanitize=fuzzer,address -parse-as-library -module-name HLS -swift-version 6 -O -g $files -o "$bin"
    mkdir -p "$scratch/corpus" "$scratch/crashes"
    cp -n "Fuzz/corpus/$target"/* "$scratch/corpus/" 2>/dev/null || true
    [[ -f Fuzz/$target.dict ]] && dict=(-dict="Fuzz/$target.dict")
    echo "fuzzing $target for ${SECONDS_TO_RUN}s; corpus and crashes in $scratch" >&2
    # -timeout: an input taking 10 s is a hang. -max_len: past the seeds' size, to reach long lines.
    # libFuzzer exits non-zero on a crash, a leak, a timeout or running out of memory.
    local status=0
    "$bin" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=131072 \
        "${dict[@]}" -artifact_prefix="$scratch/crashes/" -print_final_stats=1 \
        "$@" "$scratch/corpus" || status=$?
    if [ "$status" -ne 0 ] || [ -n "$(ls -A "$scratch/crashes")" ]; then
        echo "fuzzing $target found a problem (exit $status); inputs in $scratch/crashes:" >&2
        ls -l "$scratch/crashes" >&2
        return "${status/#0/1}"
    fi
    echo "$target: no crash in ${SECONDS_TO_RUN}s" >&2
}

for target in $TARGETS; do fuzz "$target" "$@"; done
