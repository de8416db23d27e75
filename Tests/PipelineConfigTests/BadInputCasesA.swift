import PipelineConfig

/// Bad files, part 1 (see BadInputTests.swift).
let badInputsA: [BadInput] = [
    BadInput("duration", """
version: 1
source: { test: {} }
stages:
  - audio-only: {}
  - delay:
      initial: ten
sinks: [ audio: {} ]
""",
        expect: [
            "x.yaml:6:16: stages[1].delay.initial: \"ten\" is not a duration (try 10s)"
        ]),
    BadInput("unknown-option", """
version: 1
source:
  test:
    vidoe: {}
sinks: [ audio: {} ]
""",
        expect: [
            "x.yaml:4:5: source.test.vidoe: unknown key (did you mean video? known keys: video, audio)"
        ]),
    BadInput("unknown-kind", """
version: 1
source: { test: {} }
stages:
  - dealy: {}
sinks: [ audio: {} ]
""",
        expect: [
            "x.yaml:4:5: stages[0].dealy: unknown stage kind (did you mean delay? known: audio-only, delay, encode, gst, stats)"
        ]),
    BadInput("missing-source", """
version: 1
sinks: [ audio: {} ]
""",
        expect: [
            "x.yaml:1:1: source: required key is missing (add e.g. source: { test: {} })"
        ]),
    BadInput("unset-env", """
version: 1
source: { test: {} }
sinks:
  - rtmp:
      url: rtmps://global-live.mux.com:443/app
      key: ${NOPE_KEY}
""",
        expect: [
            "x.yaml:6:12: sinks[0].rtmp.key: environment variable NOPE_KEY is not set (export it, or use --set)"
        ]),
    BadInput("env-value-not-echoed", """
version: 1
source: { test: { audio: { tone: "${MUX_STREAM_KEY}" } } }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:2:34: source.test.audio.tone: the value of \"${MUX_STREAM_KEY}\" is not a number (try 1000.0)"
        ]),
    BadInput("int", """
version: 1
source:
  test:
    video: { width: wide }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:21: source.test.video.width: \"wide\" is not an int (try 1280)"
        ]),
    BadInput("bool", """
version: 1
source:
  file: { path: a.mp4, loop: yes }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:30: source.file.loop: \"yes\" is not a bool (use true or false)"
        ]),
    BadInput("range", """
version: 1
source:
  test:
    video:
      width: 10
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:5:14: source.test.video.width: 10 is out of range (use 16...7680)"
        ]),
    BadInput("choice", """
version: 1
source: { test: {} }
stages:
  - encode:
      video: { codec: h263 }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:5:23: stages[0].encode.video.codec: \"h263\" is not one of h264 (try h264)"
        ]),
    BadInput("map-for-scalar", """
version: 1
source: { test: {} }
stages:
  - delay:
      initial: { seconds: 10 }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:5:16: stages[0].delay.initial: a map is not a duration (write a single value, e.g. initial: 10s)"
        ]),
    BadInput("scalar-for-map", """
version: 1
source:
  test:
    video: big
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:12: source.test.video: \"big\" is not a map of options (write e.g. video: { width: 1280 })"
        ]),
    BadInput("two-keys", """
version: 1
source: { test: {} }
stages:
  - delay: {}
    stats: {}
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:5: stages[0]: a stage is a map with one key, its kind; found 2: delay, stats (split them into two list items)"
        ]),
    BadInput("dup-names", """
version: 1
source: { test: {} }
stages:
  - stats: { name: tap }
sinks:
  - audio: { name: tap }
""",
        expect: [
            "x.yaml:6:20: sinks[0].audio.name: name \"tap\" is already used by stages[0].stats (pick another name)"
        ]),
    BadInput("version2", """
version: 2
source: { test: {} }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:1:10: version: version 2 is not supported (this castline reads version 1; write version: 1)"
        ]),
    BadInput("empty-sinks", """
version: 1
source: { test: {} }
sinks: []
""",
        expect: [
            "x.yaml:3:8: sinks: the list is empty (add at least one sink, e.g. sinks: [ null: {} ])"
        ]),
    BadInput("missing-required", """
version: 1
source: { test: {} }
sinks:
  - file: {}
""",
        expect: [
            "x.yaml:4:5: sinks[0].file.path: required option is missing (add path: <string>)"
        ]),
    BadInput("syntax", """
version: 1
source: { test: {}
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:3:1: invalid YAML: did not find expected ',' or '}' while parsing a flow mapping at line 2 (check the indentation and quoting here and on the lines above)"
        ]),
    BadInput("syntax2", """
version: 1
source:
  test: {}
 sinks: []
""",
        expect: [
            "x.yaml:4:2: invalid YAML: did not find expected key while parsing a block mapping at line 1 (check the indentation and quoting here and on the lines above)"
        ]),
    BadInput("empty", "",
        expect: [
            "x.yaml: the file is empty (start with version: 1, then source: and sinks:)"
        ]),
    BadInput("comments-only", "# nothing\n",
        expect: [
            "x.yaml: the file is empty (start with version: 1, then source: and sinks:)"
        ]),
    BadInput("top-list", "- version: 1\n",
        expect: [
            "x.yaml:1:1: the top level is a list, not a map of keys (start the file with version: 1, then source: and sinks:)"
        ]),
    BadInput("top-scalar", "hello\n",
        expect: [
            "x.yaml:1:1: the top level is a single value, not a map of keys (start the file with version: 1, then source: and sinks:)"
        ]),
    BadInput("dup-keys", """
version: 1
source: { test: {} }
stages:
  - delay:
      max: 1h
      max: 2h
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:5:7: key \"max\" appears more than once in the same map (keep one)"
        ]),
    BadInput("no-unit", """
version: 1
source: { test: {} }
stages:
  - delay: { initial: 10 }
sinks: [ null: {} ]
""",
        expect: [
            "x.yaml:4:23: stages[0].delay.initial: \"10\" has no unit (add a unit, e.g. 10s)"
        ]),
]
