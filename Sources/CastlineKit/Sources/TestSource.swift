import GstKit
import PipelineConfig

/// A live test signal: a moving pattern with the time burnt in, and a tone.
/// With neither `video` nor `audio` given, both come with their defaults.
public final class TestSource: SourceComponent {
    public static let kind = "test"
    public static let summary = "live test signal: video pattern and/or audio tone"
    public static let schema = OptionSchema([
        OptionField("video", .object(OptionSchema([
            OptionField("width", .int(16...7680), default: .int(1280), help: "frame width in pixels"),
            OptionField("height", .int(16...4320), default: .int(720), help: "frame height in pixels"),
            OptionField("fps", .double(1...240), default: .double(30), help: "frames per second"),
            OptionField("pattern", .choice(["smpte", "ball", "snow", "black", "bar", "circular"]),
                        default: .string("smpte"), help: "videotestsrc pattern"),
        ])), help: "a video test pattern (omit both video and audio for both)"),
        OptionField("audio", .object(OptionSchema([
            OptionField("tone", .double(20...20_000), default: .double(1000), help: "tone frequency in Hz"),
            OptionField("volume", .double(0...1), default: .double(0.5), help: "tone volume, 0 to 1"),
        ])), help: "an audio test tone (omit both video and audio for both)"),
    ])

    struct Video { var width: Int, height: Int, fps: Double, pattern: String }
    struct Audio { var tone: Double, volume: Double }
    let video: Video?
    let audio: Audio?

    public required init(spec: ComponentSpec) throws {
        let options = spec.options
        let both = options.object("video") == nil && options.object("audio") == nil
        let videoOptions = options.object("video") ?? (both ? Self.defaults("video") : nil)
        let audioOptions = options.object("audio") ?? (both ? Self.defaults("audio") : nil)
        video = videoOptions.map {
            Video(width: $0.int("width") ?? 1280, height: $0.int("height") ?? 720,
                  fps: $0.double("fps") ?? 30, pattern: $0.string("pattern") ?? "smpte")
        }
        audio = audioOptions.map { Audio(tone: $0.double("tone") ?? 1000, volume: $0.double("volume") ?? 0.5) }
    }

    /// The defaults of one of the nested objects, as the loader would fill them.
    private static func defaults(_ field: String) -> OptionValues {
        guard case .object(let nested)? = schema.field(field)?.type else { return OptionValues() }
        var values = OptionValues()
        for option in nested.fields { values[option.name] = option.defaultValue }
        return values
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        var streams: [StreamKind: StreamForm] = [:]
        if video != nil { streams[.video] = .raw }
        if audio != nil { streams[.audio] = .raw }
        return streams
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        if let video {
            let source = try ElementCatalog.make("videotestsrc")
            try source.set("is-live", true)
            try source.set("pattern", text: video.pattern)
            let (num, den) = Self.fraction(video.fps)
            let caps = try BinChain.capsFilter(
                "video/x-raw,width=\(video.width),height=\(video.height),framerate=\(num)/\(den)")
            let overlay = try ElementCatalog.make("timeoverlay")
            try overlay.set("font-desc", text: "Sans 24")
            try bin.add(source, caps, overlay)
            try source.link(caps)
            try caps.link(overlay)
            try bin.ghost(overlay.staticPad("src"), as: StreamKind.video.rawValue)
        }
        if let audio {
            let source = try ElementCatalog.make("audiotestsrc")
            try source.set("is-live", true)
            try source.set("freq", audio.tone)
            try source.set("volume", audio.volume)
            let caps = try BinChain.capsFilter("audio/x-raw,rate=48000,channels=2")
            try bin.add(source, caps)
            try source.link(caps)
            try bin.ghost(caps.staticPad("src"), as: StreamKind.audio.rawValue)
        }
        return bin
    }

    /// 29.97 → 30000/1001; whole rates stay whole.
    static func fraction(_ fps: Double) -> (Int, Int) {
        if fps == fps.rounded() { return (Int(fps), 1) }
        if abs(fps * 1001 / 1000 - (fps * 1001 / 1000).rounded()) < 0.01 {
            return (Int((fps * 1001 / 1000).rounded()) * 1000, 1001)
        }
        return (Int((fps * 1000).rounded()), 1000)
    }
}
