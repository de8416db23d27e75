import PipelineConfig

/// Mirrors castline's real kinds (CastlineKit owns the real catalog).
struct FixtureCatalog: ComponentCatalog {
    static let sources: [(String, OptionSchema)] = [
        ("test", OptionSchema([
            OptionField("video", .object(OptionSchema([
                OptionField("width", .int(16...7680), default: .int(1280), help: "Frame width in pixels."),
                OptionField("height", .int, default: .int(720), help: "Frame height in pixels."),
                OptionField("fps", .double(), default: .double(30), help: "Frames per second."),
            ])), help: "Test video."),
            OptionField("audio", .object(OptionSchema([
                OptionField("tone", .double(), default: .double(1000), help: "Tone frequency in Hz."),
                OptionField("beep", .duration, default: .duration(.seconds(1)), help: "Beep period."),
            ])), help: "Test audio."),
        ])),
        ("file", OptionSchema([
            OptionField("path", .string, required: true, help: "Media file to play."),
            OptionField("loop", .bool, default: .bool(false), help: "Start over at the end."),
        ])),
        ("uri", OptionSchema([OptionField("uri", .string, required: true, help: "Any URI GStreamer can play.")])),
        ("hls", OptionSchema([OptionField("url", .string, required: true, help: "HLS playlist URL.")])),
    ]
    static let stages: [(String, OptionSchema)] = [
        ("encode", OptionSchema([
            OptionField("video", .object(OptionSchema([
                OptionField("codec", .choice(["h264"]), default: .string("h264"), help: "Video codec."),
                OptionField("bitrate", .bitrate, default: .bitrate(Bitrate(kilobits: 2500)), help: "Video bitrate."),
                OptionField("keyframe-interval", .duration, default: .duration(.seconds(2)), help: "GOP length."),
            ])), help: "Video encoding."),
            OptionField("audio", .object(OptionSchema([
                OptionField("codec", .choice(["aac", "opus"]), default: .string("aac"), help: "Audio codec."),
                OptionField("bitrate", .bitrate, default: .bitrate(Bitrate(kilobits: 128)), help: "Audio bitrate."),
            ])), help: "Audio encoding."),
        ])),
        ("gst", OptionSchema([
            OptionField("description", .string, required: true, help: "A gst-launch bin description."),
        ], shorthand: "description")),
        ("delay", OptionSchema([
            OptionField("initial", .duration, default: .duration(.zero), help: "Delay at start."),
            OptionField("max", .duration, default: .duration(.seconds(600)), help: "Largest delay."),
            OptionField("step", .duration, default: .duration(.seconds(1)), help: "Change per key press."),
        ])),
        ("stats", OptionSchema([
            OptionField("every", .duration, default: .duration(.seconds(1)), help: "Report period."),
        ])),
        ("audio-only", OptionSchema([])),
    ]
    static let sinks: [(String, OptionSchema)] = [
        ("null", OptionSchema([])),
        ("file", OptionSchema([OptionField("path", .string, required: true, help: "Output file.")])),
        ("audio", OptionSchema([OptionField("device", .string, help: "Output device.")])),
        ("rtmp", OptionSchema([
            OptionField("url", .string, required: true, help: "rtmp:// or rtmps:// ingest URL."),
            OptionField("key", .secret, help: "Stream key, appended to the URL."),
            OptionField("insecure", .bool, default: .bool(false), help: "Skip TLS verification."),
            OptionField("ca-file", .string, help: "CA bundle for rtmps."),
        ])),
    ]

    private func table(_ role: ComponentRole) -> [(String, OptionSchema)] {
        switch role {
        case .source: Self.sources
        case .stage: Self.stages
        case .sink: Self.sinks
        }
    }

    func schema(for role: ComponentRole, kind: String) -> OptionSchema? {
        table(role).first { $0.0 == kind }?.1
    }

    func kinds(for role: ComponentRole) -> [String] {
        table(role).map(\.0)
    }
}

let catalog = FixtureCatalog()
let environment = ["MUX_STREAM_KEY": "sk-123-secret", "PLAYBACK_ID": "abc123", "EMPTY": ""]
let loader = PipelineLoader(catalog: catalog, environment: environment)

/// Loads YAML, returning the error lines (empty when it loaded).
func errorLines(_ yaml: String, file: String = "x.yaml", overrides: [String] = []) -> [String] {
    do {
        _ = try loader.load(yaml: yaml, file: file, overrides: overrides)
        return []
    } catch {
        return error.errors.map(\.description)
    }
}

/// What the pipeline-loader fuzzer (Fuzz/PipelineLoaderFuzz) and the replay of its corpus share:
/// the environment, and a valid file each input line overrides as `--set`.
enum LoaderFuzzing {
    static let environment = ["KEY": "s3cret", "EMPTY": ""]
    static let baseFile = """
        version: 1
        name: fuzz
        source: { test: { audio: {}, video: {} } }
        stages: [ { delay: { initial: 2s, max: 1m } }, { stats: {} } ]
        sinks: [ { rtmp: { url: "rtmps://127.0.0.1/live", key: { env: KEY } } }, { file: out.mkv } ]
        """
}
