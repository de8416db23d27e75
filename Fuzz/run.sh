#!/usr/bin/env bash
# Fuzzes PlaylistParser with libFuzzer for ${FUZZ_SECONDS:-60} s, under AddressSanitizer.
# The seed corpus (Fuzz/corpus/playlist) is copied to a scratch directory, which gets the new
# entries and any crash; the repo is never written to. Exits non-zero on a crash, leak or hang.
#
#   Fuzz/run.sh                  # 60 s
#   FUZZ_SECONDS=600 Fuzz/run.sh
#   FUZZ_SCRATCH=/tmp/f Fuzz/run.sh -runs=0 /tmp/f/crash-...   # replay one input (extra args go to libFuzzer)
set -euo pipefail
cd "$(dirname "$0")/.."

SWIFTC=${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}
SECONDS_TO_RUN=${FUZZ_SECONDS:-60}
SCRATCH=${FUZZ_SCRATCH:-$(mktemp -d -t castline-fuzz-playlist.XXXXXX)}
BIN=.build/fuzz-playlist

# Only the parser's own files: the rest of Sources/HLS needs swift-crypto, which plain swiftc cannot see.
# One module (-module-name HLS), so the harness calls PlaylistParser without an import;
# -parse-as-library because libFuzzer supplies main().
mkdir -p .build
"$SWIFTC" -sanitize=fuzzer,address -parse-as-library -module-name HLS -swift-version 6 -O -g \
    Sources/HLS/Playlist.swift Sources/HLS/PlaylistParser.swift Sources/HLS/AttributeList.swift \
    Fuzz/PlaylistParserFuzz/main.swift -o "$BIN"

mkdir -p "$SCRATCH/corpus" "$SCRATCH/crashes"
cp -n Fuzz/corpus/playlist/* "$SCRATCH/corpus/" 2>/dev/null || true
echo "fuzzing for ${SECONDS_TO_RUN}s; corpus and crashes in $SCRATCH" >&2

# -timeout: an input taking 10 s is a hang. -max_len: past the seeds' size, to reach long lines.
# libFuzzer exits non-zero on a crash, a leak, a timeout or running out of memory.
status=0
"$BIN" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=131072 \
    -dict=Fuzz/playlist.dict -artifact_prefix="$SCRATCH/crashes/" -print_final_stats=1 \
    "$@" "$SCRATCH/corpus" || status=$?

if [ "$status" -ne 0 ] || [ -n "$(ls -A "$SCRATCH/crashes")" ]; then
    echo "fuzzing found a problem (exit $status); inputs in $SCRATCH/crashes:" >&2
    ls -l "$SCRATCH/crashes" >&2
    exit "${status/#0/1}"
fi
echo "no crash in ${SECONDS_TO_RUN}s" >&2
