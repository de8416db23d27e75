import GstKit
import PipelineConfig
import Synchronization

/// How to encode video. Defaults follow what ingest services recommend.
public struct VideoEncoding: Sendable, Hashable {
    public static let codec = ConfigOption<Codec>("codec", .choice(["h264"]), default: .h264, help: "video codec")
    public static let bitrate = ConfigOption<Bitrate>("bitrate", default: Bitrate(bitsPerSecond: 2_500_000), help: "target bitrate")
    public static let keyframeInterval = ConfigOption<Duration>("keyframe-interval", default: .seconds(2), help: "time between keyframes")
    public static let preset = ConfigOption<String>("preset", .choice(["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]),
                                              default: "veryfast", help: "x264 speed preset: faster costs less CPU")
    public static let rateControl = ConfigOption<RateControl>("rate-control", default: .cbr,
        help: "cbr: the bitrate on the wire every second (filler when the picture needs less); vbr: up to it; crf: constant quality")
    public static let threads = ConfigOption<Int>("threads", .int(0...64), default: 0,
        help: "x264's threads: 0 lets x264 choose (slices over every core), 1 costs the least CPU where one core keeps up")
    public static let qpMin = ConfigOption<Int>("qp-min", .int(0...51), default: 0,
        help: "x264's lowest quantizer, 0 for none: a simple picture stops taking every bit of the rate at this quality (filler makes up the rest in cbr)")
    public static let profile = ConfigOption<String>("profile", .choice(["high", "main", "constrained-baseline"]), default: "high",
        help: "H.264 profile: high for ingests; constrained-baseline for WebRTC (WHIP), which every peer decodes")
    public static let schema = OptionSchema(codec, bitrate, keyframeInterval, preset, rateControl, threads, qpMin, profile)

    public var codec: Codec
    public var bitrate: Bitrate
    public var keyframeInterval: Duration
    public var preset: String
    public var rateControl: RateControl
    public var threads: Int
    public var qpMin: Int
    public var profile: String

    /// As `values` (an `encode` stage's `video:`) set it; the rest as declared above.
    public init(_ values: OptionValues = OptionValues()) {
        codec = values[Self.codec]
        bitrate = values[Self.bitrate]
        keyframeInterval = values[Self.keyframeInterval]
        preset = values[Self.preset]
        rateControl = values[Self.rateControl]
        threads = values[Self.threads]
        qpMin = values[Self.qpMin]
        profile = values[Self.profile]
    }

    /// Whether one x264 thread keeps up with `width`x`height` at `fps` with room to spare: up to
    /// 720p30 at `faster` or a faster preset (x264 takes 7-10 ms of one core here for a 720p
    /// frame at veryfast, of the 33 ms it has), where slices over two threads cost 6-7 % more CPU.
    public static func oneThreadKeepsUp(width: Int, height: Int, fps: Double, preset: String) -> Bool {
        let fastPresets: Set = ["ultrafast", "superfast", "veryfast", "faster"]
        return fastPresets.contains(preset) && Double(width * height) * fps <= 1280 * 720 * 30
    }
}

/// How x264 spends its bits.
public enum RateControl: String, Sendable, Hashable, CaseIterable, OptionRepresentable {
    /// Constant bitrate, as OBS and the ingests' own guides ask: the target on the wire every
    /// second, a one-second VBV buffer, padded with filler when the picture needs less (an easy
    /// test pattern would otherwise go out at a fraction of it).
    case cbr
    /// Up to the target: the same buffer, no filler; an easy picture costs less.
    case vbr
    /// Constant quality (CRF 23): the bitrate is whatever the picture needs.
    case crf
}

/// How to encode audio: AAC-LC 48 kHz stereo 128 kbps unless told otherwise.
public struct AudioEncoding: Sendable, Hashable {
    public static let codec = ConfigOption<Codec>("codec", .choice(["aac", "opus"]), default: .aac, help: "audio codec")
    public static let bitrate = ConfigOption<Bitrate>("bitrate", default: Bitrate(bitsPerSecond: 128_000), help: "target bitrate")
    public static let sampleRate = ConfigOption<Int>("sample-rate", .int(8000...96_000), default: 48_000, help: "sample rate in Hz")
    public static let channels = ConfigOption<Int>("channels", .int(1...8), default: 2, help: "channel count")
    public static let schema = OptionSchema(codec, bitrate, sampleRate, channels)

    public var codec: Codec
    public var bitrate: Bitrate
    public var sampleRate: Int
    public var channels: Int

    /// As `values` (an `encode` stage's `audio:`) set it; the rest as declared above.
    public init(_ values: OptionValues = OptionValues()) {
        codec = values[Self.codec]
        bitrate = values[Self.bitrate]
        sampleRate = values[Self.sampleRate]
        channels = values[Self.channels]
    }
}

/// Encoder bins: raw in (any raw format: they convert), encoded and parsed out.
public enum Encoders {
    public static let videoCodecs: [Codec] = [.h264]
    public static let audioCodecs: [Codec] = [.aac, .opus]

    public static func videoBin(_ settings: VideoEncoding, name: String) throws -> Bin {
        guard settings.codec == .h264 else {
            throw BuildError("castline encodes video as h264 only, not \(settings.codec) (use codec: h264)")
        }
        let encoder = try ElementCatalog.make("x264enc")
        try encoder.set("tune", text: "zerolatency")
        try encoder.set("speed-preset", text: settings.preset)
        try encoder.set("bitrate", UInt32(max(1, settings.bitrate.bitsPerSecond / 1000)))
        // x264enc's "cbr" pass is ABR capped by a VBV of the target rate; CBR proper adds NAL
        // HRD signalling and filler on top of it.
        try encoder.set("pass", text: settings.rateControl == .crf ? "qual" : "cbr")
        if settings.rateControl == .crf { try encoder.set("quantizer", UInt32(23)) }
        try encoder.set("vbv-buf-capacity", UInt32(1000))
        try encoder.set("threads", UInt32(settings.threads))
        let parser = try ElementCatalog.make("h264parse")
        try parser.set("config-interval", Int32(-1))
        let bin = try BinChain.make(name, [
            try ElementCatalog.make("videoconvert"),
            // Without I420 x264enc may pick 4:4:4 (High 4:4:4): ~2.5x the CPU, and ingests refuse it.
            try BinChain.capsFilter("video/x-raw,format=I420"),
            encoder,
            try BinChain.capsFilter("video/x-h264,profile=\(settings.profile)"),
            parser,
        ])
        // A fixed GOP, as ingests want: no scene-cut keyframes (the test source's flash would
        // trigger them), x264's own interval only as a backstop; the clock below sets the rhythm.
        // x264enc's own qp-min property does not reach x264 in its cbr pass; the option string does.
        var options = settings.rateControl == .cbr ? ["scenecut=0", "nal-hrd=cbr", "filler=1"] : ["scenecut=0"]
        if settings.qpMin > 0 { options.append("qpmin=\(settings.qpMin)") }
        try encoder.set("option-string", text: options.joined(separator: ":"))
        try encoder.set("key-int-max", UInt32(clamping: Int(settings.keyframeInterval.seconds * 240)))
        forceKeyframes(into: encoder, every: settings.keyframeInterval)
        return bin
    }

    /// voaacenc's delay in samples, as decoded: measured with the test signal's sound clock.
    static let aacEncoderDelay = 1520

    public static func audioBin(_ settings: AudioEncoding, name: String) throws -> Bin {
        let rawCaps = "audio/x-raw,rate=\(settings.sampleRate),channels=\(settings.channels)"
        switch settings.codec {
        case .aac:
            let encoder = try ElementCatalog.make("voaacenc")
            try encoder.set("bitrate", Int32(settings.bitrate.bitsPerSecond))
            let parse = try ElementCatalog.make("aacparse")
            // voaacenc stamps its first frame 0, but decoded, its sound comes `aacEncoderDelay`
            // samples late (priming and look-ahead), and FLV and MPEG-TS carry no edit list to
            // say so: the frames go out that much earlier, so the sound lines up with its
            // picture in any player (the latency stage measured +31.7 ms without this).
            parse.staticPad("src")?.offset = -Int64(Double(aacEncoderDelay) * 1e9 / Double(settings.sampleRate))
            return try BinChain.make(name, [
                try ElementCatalog.make("audioconvert"), try ElementCatalog.make("audioresample"),
                try BinChain.capsFilter(rawCaps), encoder, parse,
            ])
        case .opus:
            let encoder = try ElementCatalog.make("opusenc")
            try encoder.set("bitrate", Int32(settings.bitrate.bitsPerSecond))
            return try BinChain.make(name, [
                try ElementCatalog.make("audioconvert"), try ElementCatalog.make("audioresample"),
                try BinChain.capsFilter(rawCaps), encoder,
            ])
        default:
            throw BuildError("castline encodes audio as aac or opus, not \(settings.codec) (use codec: aac)")
        }
    }

    /// Keyframes every `interval` of media time, whatever the frame rate. x264enc
    /// counts its interval in frames and ignores `key-int-max` once it is past
    /// READY, before the frame rate is known; a force-key-unit event sent into
    /// its sink pad just before a frame makes that frame a keyframe.
    private static func forceKeyframes(into encoder: Element, every interval: Duration) {
        guard let pad = encoder.staticPad("sink") else { return }
        let spacing = ClockTime(interval).nanoseconds
        let slack: UInt64 = 1_000_000  // a frame timestamp may land a hair early
        let lastKeyframe = Mutex<UInt64?>(nil)
        // The encoder is reached through the probed pad: capturing it would be a reference cycle.
        pad.addProbe(.buffer) { info in
            guard let pts = info.buffer?.pts?.nanoseconds else { return .ok }
            let due = lastKeyframe.withLock { last -> Bool in
                guard last.map({ pts + slack >= $0 + spacing || pts < $0 }) ?? true else { return false }
                last = pts
                return true
            }
            if due { info.pad?.sendEvent(.forceKeyUnit(allHeaders: true)) }
            return .ok
        }
    }
}
