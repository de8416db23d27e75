#!/usr/bin/env bash
# Fuzzes castline's readers of network input with libFuzzer, under AddressSanitizer, each for
# ${FUZZ_SECONDS:-60} s: `playlist` (PlaylistParser), `transport-stream` (TransportStreamFilter
# and TransportStreamHead, which see segment bytes) and `pipeline-loader` (a pipeline file, a
# `POST /swap` body or a `--watch` edit, and `--set` overrides: YAML → spec → validation) and
# `control-body` (a `POST /delay` or `/gain` body, a `castline ctl set` change).
# FUZZ_TARGETS picks (default: all four).
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
TARGETS=${FUZZ_TARGETS:-playlist transport-stream pipeline-loader control-body}
YAMS=.build/checkouts/Yams/Sources

# A target's own files only: the rest of Sources/HLS needs swift-crypto, which plain swiftc cannot
# see. One module (HLS, PipelineConfig, CastlineKit), so a harness calls the code without an import;
# -parse-as-library because libFuzzer supplies main().
sources() {
    case $1 in
        playlist) echo Sources/HLS/Playlist.swift Sources/HLS/PlaylistParser.swift Sources/HLS/AttributeList.swift \
            Fuzz/PlaylistParserFuzz/main.swift ;;
        transport-stream) echo Sources/HLS/TransportStreamHead.swift Sources/HLS/TransportStreamFilter.swift Sources/HLS/PackedAudio.swift \
            Fuzz/TransportStreamFuzz/main.swift ;;
        pipeline-loader) echo Sources/PipelineConfig/*.swift Tests/PipelineConfigTests/FixtureCatalog.swift \
            Fuzz/PipelineLoaderFuzz/main.swift ;;
        control-body) echo Sources/CastlineKit/Model/StageAdjustment.swift Fuzz/ControlBodyFuzz/main.swift ;;
        *) echo "unknown fuzz target $1 (playlist, transport-stream, pipeline-loader, control-body)" >&2; return 2 ;;
    esac
}

# The module name each target's sources are compiled as, and what else it links.
module() { case $1 in pipeline-loader) echo PipelineConfig ;; control-body) echo CastlineKit ;; *) echo HLS ;; esac; }
linked() {
    [[ $1 == pipeline-loader ]] || return 0
    yams >&2
    echo -I .build/fuzz-yams -L .build/fuzz-yams -lYams -lCYaml -Xcc -I$YAMS/CYaml/include
}

# Yams (from the package's checkout: run `swift build` once) as a static library under
# AddressSanitizer, with its C part (libyaml).
yams() {
    local out=.build/fuzz-yams
    [[ -f $out/libYams.a ]] && return 0
    [[ -d $YAMS ]] || { echo "no Yams checkout in .build/checkouts: run swift build first" >&2; return 2; }
    mkdir -p "$out"
    for c in "$YAMS"/CYaml/src/*.c; do
        clang -c -O1 -g -fsanitize=address -I"$YAMS/CYaml/include" "$c" -o "$out/$(basename "$c" .c).o"
    done
    ar rcs "$out/libCYaml.a" "$out"/*.o
    "$SWIFTC" -parse-as-library -module-name Yams -emit-module -emit-module-path "$out/Yams.swiftmodule" \
        -emit-library -static -o "$out/libYams.a" -O -sanitize=address -swift-version 5 -D SWIFT_PACKAGE \
        -Xcc -I"$YAMS/CYaml/include" -I "$YAMS/CYaml/include" "$YAMS"/Yams/*.swift
}

fuzz() {
    local target=$1
    shift
    local bin=.build/fuzz-$target scratch=${FUZZ_SCRATCH:-$(mktemp -d -t "castline-fuzz-$target.XXXXXX")}
    local files dict=() extra
    files=$(sources "$target")
    extra=$(linked "$target")
    mkdir -p .build
    # shellcheck disable=SC2086
    "$SWIFTC" -sanitize=fuzzer,address -parse-as-library -module-name "$(module "$target")" -swift-version 6 -O -g \
        $extra $files -o "$bin"
    mkdir -p "$scratch/corpus" "$scratch/crashes"
    cp -n "Fuzz/corpus/$target"/* "$scratch/corpus/" 2>/dev/null || true
    [[ -f Fuzz/$target.dict ]] && dict=(-dict="Fuzz/$target.dict")
    echo "fuzzing $target for ${SECONDS_TO_RUN}s; corpus and crashes in $scratch" >&2
    # -timeout: an input taking 10 s is a hang. -max_len: past the seeds' size, to reach long lines.
    # libFuzzer exits non-zero on a crash, a leak, a timeout or running out of memory.
    local status=0
    LSAN_OPTIONS=suppressions=Fuzz/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS} "$bin" -max_total_time="$SECONDS_TO_RUN" -timeout=10 -rss_limit_mb=4096 -max_len=131072 \
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
