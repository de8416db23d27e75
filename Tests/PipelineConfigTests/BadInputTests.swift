import Testing
import PipelineConfig

/// One bad pipeline file and the exact error lines it must produce.
struct BadInput: Sendable, CustomTestStringConvertible {
    var name: String
    var yaml: String
    var overrides: [String]
    var expect: [String]

    init(_ name: String, _ yaml: String, overrides: [String] = [], expect: [String]) {
        self.name = name
        self.yaml = yaml
        self.overrides = overrides
        self.expect = expect
    }

    var testDescription: String { name }
}

let badInputs: [BadInput] = [
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
            "x.yaml:1:1: the top level is \"hello\", not a map of keys (start the file with version: 1, then source: and sinks:)"
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
]

@Test(arguments: badInputs)
func badInputGivesExactErrors(_ input: BadInput) {
    #expect(errorLines(input.yaml, overrides: input.overrides) == input.expect)
}

@Test func badInputTableIsLarge() {
    #expect(badInputs.count >= 30)
    #expect(Set(badInputs.map(\.name)).count == badInputs.count)
}

@Test func missingFile() {
    #expect(throws: ConfigErrors.self) { try loader.load(contentsOf: "/nonexistent/x.yaml") }
    do {
        _ = try loader.load(contentsOf: "no/such/listen.yaml")
        Issue.record("expected an error")
    } catch {
        #expect(error.errors == [ConfigError(file: "no/such/listen.yaml", message: "no such file (check the path)")])
        #expect(error.description == "no/such/listen.yaml: no such file (check the path)")
    }
}

@Test func directoryIsNotAFile() {
    do {
        _ = try loader.load(contentsOf: "/tmp")
        Issue.record("expected an error")
    } catch {
        #expect(error.description == "/tmp: is a directory (pass a .yaml file)")
    }
}

@Test func errorsCarryPositionsAndKeyPaths() throws {
    let yaml = """
    version: 1
    source: { test: {} }
    stages:
      - delay: { initial: ten }
    sinks: [ null: {} ]
    """
    do {
        _ = try loader.load(yaml: yaml, file: "dir/listen.yaml")
        Issue.record("expected an error")
    } catch {
        let e = try #require(error.errors.first)
        #expect(e.file == "dir/listen.yaml")
        #expect(e.line == 4)
        #expect(e.column == 23)
        #expect(e.keyPath == "stages[0].delay.initial")
        #expect(e.message == "\"ten\" is not a duration (try 10s)")
    }
}

@Test(arguments: [
    (ConfigError(file: "a.yaml", line: 3, column: 5, keyPath: "k.p", message: "m"), "a.yaml:3:5: k.p: m"),
    (ConfigError(file: "a.yaml", line: 0, column: 0, keyPath: "k.p", message: "m"), "a.yaml: k.p: m"),
    (ConfigError(file: "a.yaml", line: 2, column: 1, keyPath: "", message: "m"), "a.yaml:2:1: m"),
    (ConfigError(file: "--set", message: "m"), "--set: m"),
])
func configErrorDescription(_ error: ConfigError, _ text: String) {
    #expect(error.description == text)
}

@Test func configErrorsArePrintedOnePerLine() {
    let errors = ConfigErrors([ConfigError(file: "a", message: "one"), ConfigError(file: "b", line: 1, column: 2, message: "two")])
    #expect(errors.description == "a: one\nb:1:2: two")
}
