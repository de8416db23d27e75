import CastlineKit

/// Encodes raw streams: H.264 video, AAC or Opus audio. With neither `video`
/// nor `audio` given, both are encoded with defaults; with one, only that one.
public final class EncodeStage: Stage {
    public static let kind = "encode"
    public static let summary = "encode raw streams (video: h264; audio: aac or opus)"
    public static let schema = OptionSchema([
        OptionField("video", .object(OptionSchema([
            OptionField("codec", .choice(["h264"]), default: .string("h264"), help: "video codec"),
            OptionField("bitrate", .bitrate, default: .bitrate(Bitrate(bitsPerSecond: 2_500_000)), help: "target bitrate"),
            OptionField("keyframe-interval", .duration, default: .duration(.seconds(2)), help: "time between keyframes"),
            OptionField("preset", .choice(["ultrafast", "superfast", "veryfast", "faster", "fast", "medium"]),
                        default: .string("veryfast"), help: "x264 speed preset: faster costs less CPU"),
            OptionField("rate-control", .choice(RateControl.allCases.map(\.rawValue)), default: .string("cbr"),
                        help: "cbr: the bitrate on the wire every second (filler when the picture needs less); vbr: up to it; crf: constant quality"),
        ])), help: "encode video (omit both video and audio for both)"),
        OptionField("audio", .object(OptionSchema([
            OptionField("codec", .choice(["aac", "opus"]), default: .string("aac"), help: "audio codec"),
            OptionField("bitrate", .bitrate, default: .bitrate(Bitrate(bitsPerSecond: 128_000)), help: "target bitrate"),
            OptionField("sample-rate", .int(8000...96_000), default: .int(48_000), help: "sample rate in Hz"),
            OptionField("channels", .int(1...8), default: .int(2), help: "channel count"),
        ])), help: "encode audio (omit both video and audio for both)"),
        OptionField("when", .choice(["always", "needed"]), default: .string("always"),
                    help: "needed: pass streams already in the target codec through untouched (no re-encode)"),
    ])

    let video: VideoEncoding?
    let audio: AudioEncoding?
    let onlyWhenNeeded: Bool
    private let context: ComponentContext

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let both = options.object("video") == nil && options.object("audio") == nil
        onlyWhenNeeded = options.string("when") == "needed"
        self.context = context
        if let values = options.object("video") ?? (both ? OptionValues() : nil) {
            var settings = VideoEncoding()
            if let bitrate = values.bitrate("bitrate") { settings.bitrate = bitrate }
            if let interval = values.duration("keyframe-interval") { settings.keyframeInterval = interval }
            if let preset = values.string("preset") { settings.preset = preset }
            if let mode = values.string("rate-control").flatMap(RateControl.init(rawValue:)) { settings.rateControl = mode }
            guard settings.keyframeInterval > .zero else {
                throw BuildError("must be more than 0 (try 2s)", at: "\(spec.keyPath).video.keyframe-interval")
            }
            video = settings
        } else {
            video = nil
        }
        if let values = options.object("audio") ?? (both ? OptionValues() : nil) {
            var settings = AudioEncoding()
            if let codec = values.string("codec").flatMap(Codec.init(rawValue:)) { settings.codec = codec }
            if let bitrate = values.bitrate("bitrate") { settings.bitrate = bitrate }
            if let rate = values.int("sample-rate") { settings.sampleRate = rate }
            if let channels = values.int("channels") { settings.channels = channels }
            audio = settings
        } else {
            audio = nil
        }
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        let target = stream == .video ? video?.codec : audio?.codec
        guard let target else { return .passThrough }
        if onlyWhenNeeded, form == .encoded(target) { return .passThrough }
        return .process(takes: .raw)
    }

    public func output(for stream: StreamKind, input: StreamForm) -> StreamForm {
        switch stream {
        case .video: .encoded(video?.codec)
        case .audio: .encoded(audio?.codec)
        }
    }

    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        switch stream {
        case .video:
            guard let video else { throw BuildError("internal: encode asked for video it does not take") }
            let bin = try Encoders.videoBin(video, name: name)
            // Constant quality has no bitrate to aim at.
            if video.rateControl != .crf { sayTarget(.video, video.bitrate) }
            return bin
        case .audio:
            guard let audio else { throw BuildError("internal: encode asked for audio it does not take") }
            let bin = try Encoders.audioBin(audio, name: name)
            sayTarget(.audio, audio.bitrate)
            return bin
        }
    }

    private func sayTarget(_ stream: StreamKind, _ bitrate: Bitrate) {
        context.events.emit(.stage(.targetBitrate(stage: context.componentName, stream: stream,
                                                  kbps: Double(bitrate.bitsPerSecond) / 1000)))
    }
}
