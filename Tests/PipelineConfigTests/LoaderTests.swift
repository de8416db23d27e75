import Foundation
import Testing
@testable import PipelineConfig

let listenYAML = """
# Listen to a live HLS stream 10 s behind live, audio only.
version: 1
name: listen-delayed
source:
  hls:
    url: https://stream.mux.com/${PLAYBACK_ID}.m3u8
stages:
  - audio-only: {}
  - delay:
      initial: 10s
      max: 1h
  - stats:
      name: tap-1
      every: 1s
  - gst: "audioecho delay=500000000 intensity=0.3"     # scalar shorthand
sinks:
  - audio: {}
  - rtmp:
      url: rtmps://global-live.mux.com:443/app
      key: ${MUX_STREAM_KEY}
"""

@Test func loadsTheExampleFile() throws {
    let spec = try loader.load(yaml: listenYAML, file: "listen.yaml")
    #expect(spec.version == 1)
    #expect(spec.name == "listen-delayed")
    #expect(spec.source == ComponentSpec(kind: "hls", options: OptionValues(["url": .string("https://stream.mux.com/abc123.m3u8")]),
                                         keyPath: "source.hls"))
    #expect(spec.stages.map(\.kind) == ["audio-only", "delay", "stats", "gst"])
    #expect(spec.stages.map(\.keyPath) == ["stages[0].audio-only", "stages[1].delay", "stages[2].stats", "stages[3].gst"])
    #expect(spec.stages[0].options.isEmpty)
    let delay = spec.stages[1].options
    #expect(delay.duration("initial") == .seconds(10))
    #expect(delay.duration("max") == .seconds(3600))
    #expect(delay.duration("step") == .seconds(1))  // default filled
    #expect(spec.stages[2].name == "tap-1")
    #expect(spec.stages[2].options == OptionValues(["every": .duration(.seconds(1))]))
    #expect(spec.stages[3].options.string("description") == "audioecho delay=500000000 intensity=0.3")
    #expect(spec.sinks.map(\.keyPath) == ["sinks[0].audio", "sinks[1].rtmp"])
    #expect(spec.sinks[0].options.isEmpty)  // device has no default
    let rtmp = spec.sinks[1].options
    #expect(rtmp.string("url") == "rtmps://global-live.mux.com:443/app")
    #expect(rtmp.bool("insecure") == false)
    let key = try #require(rtmp.secret("key"))
    #expect(key.reveal() == "sk-123-secret")
    #expect(key.reference == "${MUX_STREAM_KEY}")
    #expect(spec.allSecrets == [key])
}

@Test func loadsFromDiskAndNamesAfterTheFile() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("castline-config-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("my-show.yaml").path
    try "version: 1\nsource: { test: {} }\nsinks: [ null: {} ]\n".write(toFile: path, atomically: true, encoding: .utf8)
    let spec = try loader.load(contentsOf: path)
    #expect(spec.name == "my-show")
    #expect(spec.stages == [])
    #expect(spec.sinks == [ComponentSpec(kind: "null", keyPath: "sinks[0].null")])
}

@Test func objectDefaultsAreFilledWhenTheObjectIsPresent() throws {
    let yaml = """
    version: 1
    source:
      test:
        video: {}
    stages:
      - encode:
          audio:
    sinks: [ null: ]
    """
    let spec = try loader.load(yaml: yaml, file: "x.yaml")
    #expect(spec.source.options == OptionValues([
        "video": .object(OptionValues(["width": .int(1280), "height": .int(720), "fps": .double(30)])),
    ]))
    #expect(spec.stages[0].options == OptionValues([
        "audio": .object(OptionValues(["codec": .string("aac"), "bitrate": .bitrate(Bitrate(kilobits: 128))])),
    ]))
}

@Test func scalarTyping() throws {
    let yaml = """
    version: 1
    source:
      test:
        video: { width: "640", fps: 25 }
        audio: { tone: 440.5, beep: 250ms }
    stages:
      - encode: { video: { bitrate: 4M, keyframe-interval: 1.5s } }
    sinks:
      - rtmp: { url: rtmp://h/app, insecure: True, ca-file: 123 }
    """
    let spec = try loader.load(yaml: yaml, file: "x.yaml")
    let video = try #require(spec.source.options.object("video"))
    #expect(video.int("width") == 640)  // a quoted number is accepted for an int option
    #expect(video["fps"] == .double(25))  // doubles accept ints
    #expect(spec.source.options.object("audio")?.double("tone") == 440.5)
    #expect(spec.source.options.object("audio")?.duration("beep") == .milliseconds(250))
    #expect(spec.stages[0].options.object("video")?.bitrate("bitrate") == Bitrate(bitsPerSecond: 4_000_000))
    #expect(spec.stages[0].options.object("video")?.duration("keyframe-interval") == .milliseconds(1500))
    #expect(spec.sinks[0].options.bool("insecure") == true)
    #expect(spec.sinks[0].options.string("ca-file") == "123")  // strings take any scalar text
}

@Test func environmentInterpolation() throws {
    let yaml = """
    version: 1
    name: ${PLAYBACK_ID}-show
    source:
      file: { path: "/media/${PLAYBACK_ID}/$${NOT_A_VAR}/$5/${EMPTY}x.mp4" }
    sinks:
      - rtmp: { url: "rtmp://h/app", key: "live_${MUX_STREAM_KEY}" }
    """
    let spec = try loader.load(yaml: yaml, file: "x.yaml")
    #expect(spec.name == "abc123-show")
    #expect(spec.source.options.string("path") == "/media/abc123/${NOT_A_VAR}/$5/x.mp4")
    let key = try #require(spec.sinks[0].options.secret("key"))
    #expect(key.reveal() == "live_sk-123-secret")
    #expect(key.reference == "live_${MUX_STREAM_KEY}")
}

@Test func literalSecretHasNoReference() throws {
    let yaml = "version: 1\nsource: { test: {} }\nsinks: [ rtmp: { url: rtmp://h/app, key: hunter2 } ]\n"
    let spec = try loader.load(yaml: yaml, file: "x.yaml")
    let key = try #require(spec.sinks[0].options.secret("key"))
    #expect(key.reveal() == "hunter2")
    #expect(key.reference == nil)
    #expect(spec.yaml(catalog: catalog).contains("key: \"****\""))
}

@Test func secretsNeverPrint() throws {
    let spec = try loader.load(yaml: listenYAML, file: "listen.yaml")
    let secret = try #require(spec.sinks[1].options.secret("key"))
    var dumped = ""
    dump(secret, to: &dumped)
    var dumpedSpec = ""
    dump(spec, to: &dumpedSpec)
    let texts = [
        "\(secret)", String(describing: secret), String(reflecting: secret), dumped,
        "\(spec)", String(reflecting: spec), dumpedSpec,
        "\(OptionValue.secret(secret))", spec.sinks[1].options.description,
        "\(Mirror(reflecting: secret).children.map { "\($0.label ?? ""): \($0.value)" })",
        spec.yaml(catalog: catalog),
    ]
    for text in texts {
        #expect(!text.contains("sk-123-secret"), "leaked in: \(text)")
    }
    #expect("\(secret)" == "****")
    #expect(String(reflecting: secret) == "****")
}

@Test func allSecretsCollectsEverySecret() throws {
    let yaml = """
    version: 1
    source: { test: {} }
    sinks:
      - rtmp: { url: rtmp://a/app, key: one }
      - rtmp: { url: rtmp://b/app, key: "${MUX_STREAM_KEY}" }
      - rtmp: { url: rtmp://c/app }
    """
    let spec = try loader.load(yaml: yaml, file: "x.yaml")
    #expect(spec.allSecrets.map { $0.reveal() } == ["one", "sk-123-secret"])
    let plain = try loader.load(yaml: "version: 1\nsource: { test: {} }\nsinks: [ audio: {} ]\n", file: "x.yaml")
    #expect(plain.allSecrets.isEmpty)
}

@Test func overridesApplyBeforeValidation() throws {
    let yaml = """
    version: 1
    source: { test: {} }
    stages:
      - gst: identity
      - delay: { initial: 10s }
    sinks:
      - rtmp: { url: rtmps://global-live.mux.com:443/app, key: "${MUX_STREAM_KEY}" }
    """
    let spec = try loader.load(yaml: yaml, file: "x.yaml", overrides: [
        "stages[1].delay.initial=5s",
        "source.test.video.width=640",  // creates video:
        "name=other",
        "sinks[0].rtmp.url=rtmp://x/app",
        "sinks[0].rtmp.key=abc",
        "stages[0].gst=\"queue ! identity\"",
        "source.test.audio={tone: 440}",
        "stages[1].delay.max=2h",
    ])
    #expect(spec.name == "other")
    #expect(spec.stages[1].options.duration("initial") == .seconds(5))
    #expect(spec.stages[1].options.duration("max") == .seconds(7200))
    #expect(spec.source.options.object("video") == OptionValues(["width": .int(640), "height": .int(720), "fps": .double(30)]))
    #expect(spec.source.options.object("audio")?.double("tone") == 440)
    #expect(spec.stages[0].options.string("description") == "queue ! identity")
    #expect(spec.sinks[0].options.string("url") == "rtmp://x/app")
    #expect(spec.sinks[0].options.secret("key") == Secret("abc"))
}

@Test func overrideCanFixAMissingVariable() throws {
    let yaml = "version: 1\nsource: { test: {} }\nsinks: [ rtmp: { url: rtmp://h/app, key: \"${UNSET_KEY}\" } ]\n"
    #expect(errorLines(yaml) == [
        "x.yaml:3:42: sinks[0].rtmp.key: environment variable UNSET_KEY is not set (export it, or use --set)",
    ])
    let spec = try loader.load(yaml: yaml, file: "x.yaml", overrides: ["sinks[0].rtmp.key=k"])
    #expect(spec.sinks[0].options.secret("key")?.reveal() == "k")
}

@Test func checkingAFileDefersUnsetSecretsOnly() throws {
    // A CI job validates without the keys: an unset variable in a secret is needed at run time,
    // not an error; anywhere else it still is one.
    var checking = loader
    checking.defersUnsetSecrets = true
    let yaml = "version: 1\nsource: { test: {} }\nsinks: [ rtmp: { url: rtmp://h/app, key: \"live_${UNSET_KEY}${UNSET_B}\" } ]\n"
    let spec = try checking.load(yaml: yaml, file: "x.yaml")
    #expect(spec.neededAtRunTime == ["UNSET_KEY", "UNSET_B"])
    #expect(spec.sinks[0].options.secret("key")?.reference == "live_${UNSET_KEY}${UNSET_B}")
    let url = "version: 1\nsource: { test: {} }\nsinks: [ rtmp: { url: \"rtmp://${UNSET_HOST}/app\", key: k } ]\n"
    #expect(throws: ConfigErrors.self) { try checking.load(yaml: url, file: "x.yaml") }
    #expect(try loader.load(yaml: "version: 1\nsource: { test: {} }\nsinks: [ null: {} ]\n", file: "x.yaml").neededAtRunTime.isEmpty)
}

let roundTripFiles = [
    listenYAML,
    """
    version: 1
    source:
      test:
        video: { width: 640, fps: 29.97 }
        audio: { beep: 1.5s }
    stages:
      - encode:
          video: { bitrate: 4.5M, keyframe-interval: 1s }
          audio: { codec: opus, bitrate: 96kbps }
      - gst: { name: echo, description: "audioecho delay=500000000 intensity=0.3 # not a comment" }
      - delay: { initial: 1h30m, max: 2h, step: 250ms }
    sinks:
      - file: { name: rec, path: "out dir/${PLAYBACK_ID}.ts" }
      - rtmp: { url: "rtmp://h/app?x=1&y=2", key: "pre_${MUX_STREAM_KEY}", insecure: true, ca-file: "/etc/ca: 1.pem" }
      - null: {}
    """,
    """
    version: 1
    source: { file: { path: "$${HOME}/weird \\"name\\".mp4", loop: true } }
    sinks: [ audio: { device: "null" } ]
    """,
]

@Test(arguments: roundTripFiles)
func yamlRoundTrip(_ yaml: String) throws {
    let spec = try loader.load(yaml: yaml, file: "x.yaml")
    let written = spec.yaml(catalog: catalog)
    let again = try loader.load(yaml: written, file: "y.yaml")
    #expect(again == spec, "written:\n\(written)")
    #expect(again.yaml(catalog: catalog) == written)
}

@Test func canonicalYAML() throws {
    let spec = try loader.load(yaml: listenYAML, file: "listen.yaml")
    #expect(spec.yaml(catalog: catalog) == """
    version: 1
    name: listen-delayed
    source:
      hls:
        url: https://stream.mux.com/abc123.m3u8
    stages:
      - audio-only: {}
      - delay:
          initial: 10s
          max: 1h
      - stats:
          name: tap-1
      - gst:
          description: "audioecho delay=500000000 intensity=0.3"
    sinks:
      - audio: {}
      - rtmp:
          url: rtmps://global-live.mux.com:443/app
          key: ${MUX_STREAM_KEY}

    """)
}
