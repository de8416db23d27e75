#!/usr/bin/env bash
# `make demo`: the main job, start to finish, on this machine only.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
castline=.build/debug/castline
"$castline" validate pipelines/*.yaml
"$castline" run pipelines/tone-to-wav.yaml --duration 5s
ffprobe -v error -show_entries format=duration:stream=codec_name,sample_rate,channels -of default=nw=1 out/tone.wav
