import GstKit
import PipelineConfig

/// A live test signal, an A/V sync check a person can see and hear: a pattern
/// with the wall-clock time and frame count burnt into a caption box that
/// moves across it, and a tone with a beep on every wall-clock second that
/// flashes a white square in the picture on the same frame.
///
/// The default pattern is the HD colour bars (SMPTE RP 219), still, with the
/// motion in the caption: a picture x264 encodes at about a third of the CPU of
/// scrolling SD bars (1.9 vs 6.6 CPU-s per 300 frames at 720p, 2500 kbps), so
/// a test broadcast costs little more than the encoder's floor.
/// With neither `video` nor `audio` given, both come with their defaults.
public final class TestSource: SourceComponent {
    public static let kind = "test"
    public static let summary = "live test signal: video pattern and/or audio tone"
    public static let videoOptions = ConfigOption<OptionValues?>("video", .object(Video.schema),
                                                    help: "a video test pattern (omit both video and audio for both)")
    public static let audioOptions = ConfigOption<OptionValues?>("audio", .object(Audio.schema),
                                                    help: "an audio test tone (omit both video and audio for both)")
    public static let clock = ConfigOption<Bool>("clock", default: true,
        help: "a machine-readable clock: a block stripe along the picture's bottom, each second's number after its beep (what the latency stage reads)")
    public static let avOffset = ConfigOption<Duration>("av-offset", default: .zero,
        help: "the sound's marks this much after the picture's (a known A/V offset to measure, e.g. 120ms)")
    public static let live = ConfigOption<Bool>("live", default: true,
        help: "false: made as fast as the sinks take it (with `null: { sync: false }` or a file), to render test media; the clock then runs from the start on media time")
    public static let schema = OptionSchema(videoOptions, audioOptions, clock, avOffset, live)

    public struct Video: Sendable {
        public static let width = ConfigOption<Int>("width", .int(16...7680), default: 1280, help: "frame width in pixels")
        public static let height = ConfigOption<Int>("height", .int(16...4320), default: 720, help: "frame height in pixels")
        public static let fps = ConfigOption<Double>("fps", .double(1...240), default: 30, help: "frames per second")
        public static let pattern = ConfigOption<String>("pattern", .choice(["smpte-rp-219", "smpte", "ball", "snow", "black", "bar", "circular"]),
                                            default: "smpte-rp-219", help: "videotestsrc pattern (smpte-rp-219: HD colour bars)")
        public static let caption = ConfigOption<String>("caption", .choice(["moving", "still"]), default: "moving",
            help: "the clock and frame caption bounces across the top of the picture (a frozen stream shows), or stays top left")
        static let schema = OptionSchema(width, height, fps, pattern, caption)

        var width: Int, height: Int, fps: Double, pattern: String, movingCaption: Bool

        init(_ values: OptionValues) {
            (width, height, fps) = (values[Self.width], values[Self.height], values[Self.fps])
            (pattern, movingCaption) = (values[Self.pattern], values[Self.caption] != "still")
        }
    }

    public struct Audio: Sendable {
        public static let tone = ConfigOption<Double>("tone", .double(20...10_000), default: 1000, help: "tone frequency in Hz")
        // 0.08 (-22 dBFS): with its beeps the signal reads about -17.5 LUFS, near EBU R68's line-up
        // level, so a loudness check at the R128 target (-23 LUFS) does not call it loud.
        public static let volume = ConfigOption<Double>("volume", .double(0...1), default: 0.08, help: "tone volume, 0 to 1 (the beeps are 3 times as loud)")
        public static let beep = ConfigOption<Duration>("beep", default: .seconds(1),
            help: "a 100 ms beep at twice the tone's pitch (and a white square flashed) every this often on the wall clock; 0s for none")
        static let schema = OptionSchema(tone, volume, beep)

        var tone: Double, volume: Double, beep: Duration

        init(_ values: OptionValues) {
            (tone, volume, beep) = (values[Self.tone], values[Self.volume], values[Self.beep])
        }
    }
    /// The quantizer floor to encode this picture with: still bars, a caption and a clock stripe
    /// look the same at 20 as below it, where x264 spends the whole rate (QP 3-5 at 2500k 720p)
    /// and 5-7 % more CPU on coding them finer.
    public static let encoderQPMin = 20

    let video: Video?
    let audio: Audio?
    let avOffset: Duration
    let clock: Bool
    let live: Bool

    public required init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let both = options[Self.videoOptions] == nil && options[Self.audioOptions] == nil
        video = (options[Self.videoOptions] ?? (both ? OptionValues() : nil)).map(Video.init)
        audio = (options[Self.audioOptions] ?? (both ? OptionValues() : nil)).map(Audio.init)
        avOffset = options[Self.avOffset]
        clock = options[Self.clock]
        live = options[Self.live]
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        var streams: [StreamKind: StreamForm] = [:]
        if video != nil { streams[.video] = .raw }
        if audio != nil { streams[.audio] = .raw }
        return streams
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        let marks = SyncMarks(interval: audio?.beep ?? .seconds(1), beepFrequency: 2 * (audio?.tone ?? 1000),
                              audioLate: avOffset.seconds, clock: clock)
        if let video, streams[.video] != nil { try addVideo(video, marks: marks, to: bin) }
        if let audio, streams[.audio] != nil { try addAudio(audio, marks: marks, to: bin) }
        return bin
    }

    private func addVideo(_ video: Video, marks: SyncMarks, to bin: Bin) throws {
        let source = try ElementCatalog.make("videotestsrc")
        try source.set("is-live", live)
        try source.set("pattern", text: video.pattern)
        try source.set("horizontal-speed", Int32(2))
        let (num, den) = Self.fraction(video.fps)
        let caps = try BinChain.capsFilter(
            "video/x-raw,format=I420,width=\(video.width),height=\(video.height),framerate=\(num)/\(den)")
        let overlay = try ElementCatalog.make("textoverlay")
        try overlay.set("font-desc", text: "Monospace \(max(8, video.height / 48))")
        try overlay.set("valignment", text: "position")
        try overlay.set("halignment", text: "position")
        try overlay.set("shaded-background", true)
        // On a shaded box the outline and shadow add nothing visible, and drawing
        // them (cairo strokes, every frame as the caption changes) cost 4.5x the
        // plain text: 3.6 vs 0.8 CPU-s per 600 frames.
        try overlay.set("draw-outline", false)
        try overlay.set("draw-shadow", false)
        try bin.add(source, caps, overlay)
        try source.link(caps)
        try caps.link(overlay)
        let (stillX, stillY) = SyncMarks.stillCaptionPlace
        try overlay.set("xpos", stillX)
        try overlay.set("ypos", stillY)
        // The caption (and its place, when it moves) is set on the overlay just before each frame reaches it.
        let moving = video.movingCaption
        overlay.staticPad("video_sink")?.addProbe(.buffer) { info in
            if let pts = info.buffer?.pts, let element = info.pad?.parentElement {
                try? element.set("text", marks.caption(pts))
                guard moving else { return .ok }
                try? element.set("xpos", SyncMarks.captionX(pts))
            }
            return .ok
        }
        let (width, height) = (video.width, video.height)
        overlay.staticPad("src")?.addProbe(.buffer) { info in
            marks.flashAndStamp(&info, width: width, height: height)
            return .ok
        }
        try bin.ghost(overlay.staticPad("src"), as: StreamKind.video.rawValue)
    }

    private func addAudio(_ audio: Audio, marks: SyncMarks, to bin: Bin) throws {
        let source = try ElementCatalog.make("audiotestsrc")
        try source.set("is-live", live)
        try source.set("freq", audio.tone)
        try source.set("volume", audio.volume)
        // One AAC frame per buffer; the beep is placed sample by sample, so its
        // edges do not depend on the buffer size.
        try source.set("samplesperbuffer", Int32(1024))
        let caps = try BinChain.capsFilter("audio/x-raw,format=F32LE,layout=interleaved,rate=48000,channels=2")
        try bin.add(source, caps)
        try source.link(caps)
        let volume = audio.volume
        caps.staticPad("src")?.addProbe(.buffer) { info in
            marks.addBeep(&info, rate: 48_000, channels: 2, volume: volume)
            return .ok
        }
        try bin.ghost(caps.staticPad("src"), as: StreamKind.audio.rawValue)
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
