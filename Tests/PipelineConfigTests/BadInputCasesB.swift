import PipelineConfig

/// Bad files, part 2, including --set overrides.
let badInputsB: [BadInput] = [
    BadInput("negative", """
version: 1
source: { test: {} }
stages:
  - delay: { initial: -5s }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:23: stages[0].delay.initial: \"-5s\" is negative (use 0 or more, e.g. 10s)"
        ]),
    BadInput("fraction-int", """
version: 1
source:
  test: { video: { width: 30.5 } }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:27: source.test.video.width: \"30.5\" is not an int (use a whole number, e.g. 30)"
        ]),
    BadInput("double", """
version: 1
source:
  test: { audio: { tone: loud } }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:26: source.test.audio.tone: \"loud\" is not a number (try 1000.0)"
        ]),
    BadInput("bitrate", """
version: 1
source: { test: {} }
stages:
  - encode: { audio: { bitrate: fast } }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:33: stages[0].encode.audio.bitrate: \"fast\" is not a bitrate (try 128k)"
        ]),
    BadInput("bitrate-no-unit", """
version: 1
source: { test: {} }
stages:
  - encode: { video: { bitrate: 2500 } }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:33: stages[0].encode.video.bitrate: \"2500\" has no unit (write 2500k for kbit/s, or 2500bps)"
        ]),
    BadInput("top-unknown", """
version: 1
source: { test: {} }
stage: []
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:1: stage: unknown key (did you mean stages? known keys: version, name, source, stages, sinks)"
        ]),
    BadInput("missing-version-sinks", """
source: { test: {} }
""",
        expect: [
            "x.yaml:1:1: version: required key is missing (add version: 1 at the top of the file)",
            "x.yaml:1:1: sinks: required key is missing (add e.g. sinks: [ null: {} ])"
        ]),
    BadInput("stages-map", """
version: 1
source: { test: {} }
stages:
  delay: {}
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:3: stages: a map is not a list (write each stage as a list item, e.g. stages: [ encode: {} ])"
        ]),
    BadInput("sink-scalar", """
version: 1
source: { test: {} }
sinks:
  - audio
""",
        expect: [
            "x.yaml:4:5: sinks[0]: \"audio\" is not a map (write - audio: {})"
        ]),
    BadInput("list-value", """
version: 1
source: { test: {} }
stages:
  - delay: [ 1s, 2s ]
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:12: stages[0].delay: a list is not a map of options (write e.g. delay: { initial: 10s })"
        ]),
    BadInput("unknown-source", """
version: 1
source:
  tset: {}
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:3: source.tset: unknown source kind (did you mean test? known: file, hls, test, uri)"
        ]),
    BadInput("two-sources", """
version: 1
source:
  test: {}
  file: { path: a.mp4 }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:3: source: a source is a map with one key, its kind; found 2: test, file (keep one; a pipeline has one source)"
        ]),
    BadInput("bad-name", """
version: 1
source: { test: {} }
stages:
  - stats: { name: tap 1 }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:20: stages[0].stats.name: \"tap 1\" is not a valid name (use letters, digits, - and _, e.g. tap-1)"
        ]),
    BadInput("no-options", """
version: 1
source: { test: {} }
stages:
  - audio-only: { mono: true }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:19: stages[0].audio-only.mono: unknown key (audio-only takes no options)"
        ]),
    BadInput("empty-item", """
version: 1
source: { test: {} }
stages:
  - {}
  -
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:5: stages[0]: a stage is a map with one key, its kind; found none (write e.g. - encode: {})",
            "x.yaml:5:4: stages[1]: the stage is empty (write e.g. - encode: {})"
        ]),
    BadInput("scalar-no-shorthand", """
version: 1
source: { test: {} }
stages:
  - delay: 5s
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:12: stages[0].delay: \"5s\" is not a map of options (write e.g. delay: { initial: 10s })"
        ]),
    BadInput("unterminated", """
version: 1
source:
  hls: { url: "https://x/${PLAYBACK_ID.m3u8" }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:15: source.hls.url: \"${\" has no closing \"}\" (write ${NAME}, or $${ for a literal ${)"
        ]),
    BadInput("many", """
version: 3
name: many
source:
  test:
    video: { width: 99999, fps: fast }
stages:
  - delay: { initial: 1 }
  - gst: {}
sinks:
  - rtmp: { url: rtmp://x/app, insecure: maybe }
  - file: { path: out.ts, mode: append }
""",
        expect: [
            "x.yaml:1:10: version: version 3 is not supported (this castline reads version 1; write version: 1)",
            "x.yaml:5:21: source.test.video.width: 99999 is out of range (use 16...7680)",
            "x.yaml:5:33: source.test.video.fps: \"fast\" is not a number (try 30.0)",
            "x.yaml:7:23: stages[0].delay.initial: \"1\" has no unit (add a unit, e.g. 1s)",
            "x.yaml:8:5: stages[1].gst.description: required option is missing (add description: <string>)",
            "x.yaml:10:42: sinks[0].rtmp.insecure: \"maybe\" is not a bool (use true or false)",
            "x.yaml:11:27: sinks[1].file.mode: unknown key (known keys: path)"
        ]),
    BadInput("set-index", """
version: 1
source: { test: {} }
stages: [ delay: {}, stats: {} ]
sinks: [ null: {} ]
""", overrides: ["stages[5].delay.initial=5s", "foo", "stages[0].delay.initial=soon", "source.test.video.width=640", "source.test.video.width.x=1"],
        expect: [
            "--set: \"foo\" is not key.path=value (try --set stages[0].delay.initial=5s)",
            "--set: stages[5]: there is no stages[5] (the file has 2 stages)",
            "--set: source.test.video.width.x: source.test.video.width is \"640\", not a map (set source.test.video.width=VALUE instead)",
            "--set: stages[0].delay.initial: \"soon\" is not a duration (try 10s)"
        ]),
    BadInput("set-scalar", """
version: 1
source: { test: {} }
stages: [ gst: "identity" ]
sinks: [ null: {} ]
""", overrides: ["stages[0].gst.description.x=1", "sinks.x=1", "source[0]=1", "version=2"],
        expect: [
            "--set: stages[0].gst.description: stages[0].gst is \"identity\", not a map (set stages[0].gst=VALUE instead)",
            "--set: sinks.x: sinks is a list, not a map (pick an item, e.g. sinks[0])",
            "--set: source[0]: source is a map, not a list (set source.KEY=VALUE instead)",
            "--set: version: version 2 is not supported (this castline reads version 1; write version: 1)"
        ]),
    BadInput("pipeline-name-map", """
version: one
name: { a: 1 }
source: { test: {} }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:1:10: version: \"one\" is not a version number (write version: 1)",
            "x.yaml:2:7: name: a map is not a string (write e.g. name: my-pipeline)"
        ]),
    BadInput("secret-map", """
version: 1
source: { test: {} }
sinks:
  - rtmp: { url: rtmp://x/app, key: { env: KEY } }
""",
        expect: [
            "x.yaml:4:37: sinks[0].rtmp.key: a map is not a secret (write a single value, e.g. key: <secret>)"
        ]),
    BadInput("null-required", """
version: 1
source:
  file: { path: }
sinks:
  - rtmp:
""",
        expect: [
            "x.yaml:3:3: source.file.path: required option is missing (add path: <string>)",
            "x.yaml:5:5: sinks[0].rtmp.url: required option is missing (add url: <string>)"
        ]),
    BadInput("sinks-null", """
version: 1
source: { test: {} }
sinks:
""",
        expect: [
            "x.yaml:3:1: sinks: the list is empty (add at least one sink, e.g. sinks: [ null: {} ])"
        ]),
    BadInput("bad-var", """
version: 1
source:
  file: { path: "${1X}/a.mp4" }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:17: source.file.path: \"1X\" is not an environment variable name (use letters, digits and _, e.g. ${MY_KEY}; write $${ for a literal ${)"
        ]),
    BadInput("two-documents", "version: 1\n---\nversion: 1\n", expect: [
        "x.yaml:2:1: the file holds more than one YAML document (keep one; remove the --- line)",
    ]),
    BadInput("tab-indent", "version: 1\nsource:\n\ttest: {}\nsinks: [ null: {} ]\n", expect: [
        "x.yaml:3:1: invalid YAML: a tab character (indent with spaces, not tabs)",
    ]),
    BadInput("set-values", """
version: 1
source: { test: {} }
sinks: [ null: {} ]
""", overrides: ["source.test.video.width=abc", "stages[0]=x", "stages=[{delay: {initial: 2}}]"], expect: [
        "--set: stages[0]: there is no stages[0] (the file has 0 stages)",
        "--set: source.test.video.width: \"abc\" is not an int (try 1280)",
        "--set: stages[0].delay.initial: \"2\" has no unit (add a unit, e.g. 2s)",
    ]),
    BadInput("alias-to-wrong-role", """
version: 1
source: &s { test: {} }
sinks: [ *s ]
""", expect: [
        "x.yaml:2:14: sinks[0].test: unknown sink kind (known: audio, file, null, rtmp)",
    ]),
]
