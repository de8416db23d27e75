import CastlineKit

/// Encodes raw streams: H.264 video, AAC or Opus audio. With neither `video`
/// nor `audio` given, both are encoded with defaults; with one, only that one.
public final class EncodeStage: Stage {
    public static let kind = "encode"
    public static let summary = "encode raw streams (video: h264; audio: aac or opus)"
    public static let videoOptions = ConfigOption<OptionValues?>("video", .object(VideoEncoding.schema),
                                                    help: "encode video (omit both video and audio for both)")
    public static let audioOptions = ConfigOption<OptionValues?>("audio", .object(AudioEncoding.schema),
                                                    help: "encode audio (omit both video and audio for both)")
    public static let when = ConfigOption<String>("when", .choice(["always", "needed"]), default: "always",
                                     help: "needed: pass streams already in the target codec through untouched (no re-encode); H.264 asked for as constrained-baseline is encoded again, its profile not known before it flows")
    public static let schema = OptionSchema(videoOptions, audioOptions, when)

    let video: VideoEncoding?
    let audio: AudioEncoding?
    let onlyWhenNeeded: Bool
    private let context: ComponentContext

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let both = options[Self.videoOptions] == nil && options[Self.audioOptions] == nil
        onlyWhenNeeded = options[Self.when] == "needed"
        self.context = context
        if let values = options[Self.videoOptions] ?? (both ? OptionValues() : nil) {
            let settings = VideoEncoding(values)
            guard settings.keyframeInterval > .zero else {
                throw BuildError("must be more than 0 (try 2s)", at: "\(spec.keyPath).video.keyframe-interval")
            }
            video = settings
        } else {
            video = nil
        }
        if let values = options[Self.audioOptions] ?? (both ? OptionValues() : nil) {
            let settings = AudioEncoding(values)
            // What opusenc takes, and what voaacenc does (per channel, and at most 6 bits a sample);
            // out of it, voaacenc quietly encodes at its default.
            let channels = settings.channels, rate = settings.sampleRate
            let range = settings.codec == .opus ? 6_000...510_000 : 4_000 * channels...min(160_000 * channels, 6 * rate * channels)
            guard range.contains(Int(settings.bitrate.bitsPerSecond)) else {
                throw BuildError("\(settings.bitrate) is outside what \(settings.codec) encodes (\(range.lowerBound / 1000)k to "
                                 + "\(range.upperBound / 1000)k; try 128k)", at: "\(spec.keyPath).audio.bitrate")
            }
            audio = settings
        } else {
            audio = nil
        }
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        let target = stream == .video ? video?.codec : audio?.codec
        guard let target else { return .passThrough }
        if onlyWhenNeeded, form == .encoded(target), !asksProfile(stream) { return .passThrough }
        return .process(takes: .raw)
    }

    /// A stream's profile is not in its form: H.264 asked for as constrained baseline (what a WebRTC
    /// peer is offered) is encoded again, as a file's is most often High, with B-frames WebRTC has no room for.
    private func asksProfile(_ stream: StreamKind) -> Bool {
        stream == .video && video?.codec == .h264 && video?.profile == "constrained-baseline"
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
