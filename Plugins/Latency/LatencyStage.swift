import CastlineKit
import Foundation
import Synchronization

/// Reads the test signal's clock back from decoded media (`PictureClock` in each frame,
/// `SoundClock` after each beep) and reports how far behind the wall clock each plays:
/// `latency_video_s` and `latency_audio_s` (the wall-clock time a frame or beep is rendered,
/// its running time plus the pipeline's latency, minus the time the media carries),
/// `av_offset_ms` (sound minus picture: positive when the sound comes late) and the picture's
/// jitter. Media passes untouched.
public final class LatencyStage: Stage {
    public static let kind = "latency"
    public static let summary = "read castline's test-signal clock back from decoded media: latency behind the wall clock, A/V offset"
    public static let every = ConfigOption<Duration>("every", default: .seconds(1), help: "how often to report the figures")
    public static let tone = ConfigOption<Double>("tone", .double(20...10_000), default: 1000,
                                     help: "the test signal's tone in Hz (its beep is at twice this, its code at three and four times)")
    public static let missingAfter = ConfigOption<Duration>("missing-after", default: .seconds(5),
                                               help: "say once that a stream carries no clock when none was read in this much of its media")
    public static let schema = OptionSchema(every, tone, missingAfter)

    /// Wall clock at the output minus the test signal's clock, per stream, and sound minus picture.
    public static let audioLatency = Figure("latency_audio_s", label: "latency, sound", meaning: .measuredLatency(.audio))
    public static let videoLatency = Figure("latency_video_s", label: "latency, picture", meaning: .measuredLatency(.video))
    public static let avOffset = Figure("av_offset_ms", label: "a/v offset (sound minus picture)", meaning: .avOffset)
    public static let figures = [audioLatency, videoLatency, avOffset]

    public static let jitter = "latency_jitter_ms"
    /// How many times the clock was read in the period: frames, and beeps.
    public static let videoReads = "clock_reads_video"
    public static let audioReads = "clock_reads_audio"

    let every: Duration
    let tone: Double
    let missingAfter: Duration
    private let context: ComponentContext
    private let readings: Mutex<Readings>
    private let timerStarted = Atomic(false)
    /// The pipeline's latency (ns): media renders that long after its running time (0 until a
    /// live pipeline sets one).
    private let pipelineLatency = Atomic<UInt64>(0)

    struct Readings {
        var audio: SoundClockReader?
        var audioFormat: (rate: Int, channels: Int)?
        var video: (width: Int, height: Int)?
        var segments: [StreamKind: SegmentInfo] = [:]
        /// Beeps read before the pipeline had a clock (a file prerolls): timed once it has one.
        var untimedMarks: [SoundClockReader.Mark] = []
        /// This period's latencies (s).
        var audioLatencies: [Double] = []
        var videoLatencies: [Double] = []
        /// The streams the clock has been read in at least once.
        var read: Set<StreamKind> = []
        /// Before the first read, since when (ns of running time) a stream carried none, and whether that was said.
        var unread: [StreamKind: (first: UInt64, said: Bool)] = [:]
        var element: Element?
        /// The streams it reads, and those that have ended: once all have, the last period is reported.
        var streams: Set<StreamKind> = []
        var ended: Set<StreamKind> = []
    }

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        every = spec.options[Self.every]
        tone = spec.options[Self.tone]
        missingAfter = spec.options[Self.missingAfter]
        self.context = context
        readings = Mutex(Readings())
        guard every >= .milliseconds(100) else { throw BuildError("must be at least 100ms (try 1s)", at: "\(spec.keyPath).every") }
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        .process(takes: .raw)
    }

    /// Audio as F32 (its first channel is read); video in a layout whose first plane is luma.
    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        let identity = try ElementCatalog.make("identity")
        try identity.set("silent", true)
        let parts = try BinChain.rawForReading(stream) + [identity]
        readings.withLock { readings in
            readings.element = readings.element ?? identity
            readings.streams.insert(stream)
        }
        // The pipeline's latency comes up as the event sinks pass upstream when it is set (a query
        // at start, before the pipeline is live, said 0 in some runs and 20 ms in others).
        identity.staticPad("src")?.addProbe([.buffer, .eventDownstream, .eventUpstream]) { [weak self] info in
            guard let self else { return .ok }
            if let event = info.event {
                self.handle(event, stream: stream)
            } else if let buffer = info.buffer, let element = info.pad?.parentElement {
                self.startTimer()
                self.read(buffer, stream: stream, element: element)
            }
            return .ok
        }
        return try BinChain.make(name, parts)
    }

    private func handle(_ event: EventView, stream: StreamKind) {
        switch event.kind {
        case .caps:
            guard let structure = event.caps?.structure(at: 0) else { return }
            readings.withLock { readings in
                if stream == .audio, let rate = structure.int("rate"), let channels = structure.int("channels") {
                    readings.audioFormat = (rate, channels)
                    readings.audio = SoundClockReader(rate: rate, tone: tone)
                } else if stream == .video, let width = structure.int("width"), let height = structure.int("height") {
                    readings.video = (width, height)
                }
            }
        case .segment:
            if let segment = event.segment { readings.withLock { $0.segments[stream] = segment } }
        case .latency:
            if let latency = event.latency { pipelineLatency.store(latency.nanoseconds, ordering: .relaxed) }
        case .eos:
            // What was read since the last report, once every stream has ended (not before: the
            // other stream's last readings would be lost).
            let all = readings.withLock { readings in
                readings.ended.insert(stream)
                return readings.ended == readings.streams
            }
            if all { _ = report() }
        default:
            break
        }
    }

    /// The wall-clock time (s) media of running time `runningTime` renders: now, plus how far
    /// ahead of the element's running time it is, plus the pipeline's latency.
    private func renderWallTime(_ runningTime: UInt64, element: Element) -> Double? {
        guard let now = element.runningTime?.nanoseconds else { return nil }
        let ahead = Double(runningTime) - Double(now) + Double(pipelineLatency.load(ordering: .relaxed))
        return Date().timeIntervalSince1970 + ahead / 1e9
    }

    private func read(_ buffer: BufferView, stream: StreamKind, element: Element) {
        // A jump in the media (a delay moved): what was read before it is of the old position,
        // and a beep's code cut by it must not be read across it.
        if buffer.isDiscont { forgetReadings(of: stream) }
        guard let pts = buffer.pts,
              let runningTime = readings.withLock({ $0.segments[stream] })?.runningTime(of: pts)?.nanoseconds else { return }
        switch stream {
        case .video:
            guard let (width, height) = readings.withLock({ $0.video }) else { return }
            let layout = buffer.firstPlane ?? (0, (width + 3) & ~3)
            let code = buffer.withUnsafeBytes { PictureClock.read($0, offset: layout.offset, stride: layout.stride, width: width, height: height) } ?? nil
            guard let code, let rendered = renderWallTime(runningTime, element: element) else { return noteUnread(stream, at: runningTime) }
            let latency = rendered - Double(code.milliseconds) / 1000
            readings.withLock { readings in
                readings.videoLatencies.append(latency)
                readings.read.insert(stream)
            }
        case .audio:
            let found = readings.withLock { readings -> Bool in
                guard var reader = readings.audio, let format = readings.audioFormat else { return false }
                let found = buffer.withUnsafeBytes { raw in
                    reader.feed(raw.bindMemory(to: Float.self), channels: format.channels, start: runningTime)
                } ?? []
                readings.audio = reader
                readings.untimedMarks += found
                return !found.isEmpty
            }
            guard found else { return noteUnread(stream, at: runningTime) }
            timeMarks(element: element)
        }
    }

    /// Drops what this period read of `stream`, and starts its sound clock reader afresh.
    private func forgetReadings(of stream: StreamKind) {
        readings.withLock { readings in
            switch stream {
            case .video:
                readings.videoLatencies.removeAll()
            case .audio:
                readings.audioLatencies.removeAll()
                readings.untimedMarks.removeAll()
                if let format = readings.audioFormat { readings.audio = SoundClockReader(rate: format.rate, tone: tone) }
            }
        }
    }

    /// Turns the beeps read into latencies once the element plays. Beeps read before (a file
    /// prerolls, and its first seconds of sound may all pass before the pipeline plays) wait,
    /// and the period's report times them if no later beep does.
    private func timeMarks(element: Element) {
        let marks = readings.withLock { readings -> [SoundClockReader.Mark] in
            guard element.runningTime != nil else { return [] }
            defer { readings.untimedMarks.removeAll() }
            return readings.untimedMarks
        }
        for mark in marks {
            guard let rendered = renderWallTime(mark.start, element: element) else { continue }
            // The mark's number is at most its render time (plus a margin for a latency read
            // just under 0, which would otherwise wrap a whole 1024 s back).
            let second = SoundClock.number(low: mark.low, before: Int64(rendered.rounded(.down)) + 2)
            let latency = rendered - Double(second)
            readings.withLock { readings in
                readings.audioLatencies.append(latency)
                readings.read.insert(.audio)
            }
        }
    }

    /// Media with no clock read in it: after `missing-after` of it, said once.
    private func noteUnread(_ stream: StreamKind, at runningTime: UInt64) {
        let say = readings.withLock { readings -> Bool in
            guard !readings.read.contains(stream) else { return false }
            var entry = readings.unread[stream] ?? (runningTime, false)
            defer { readings.unread[stream] = entry }
            guard !entry.said, runningTime >= entry.first + UInt64(missingAfter.seconds * 1e9) else { return false }
            entry.said = true
            return true
        }
        guard say else { return }
        let what = stream == .audio ? "sound (the beep and the code after it)" : "picture (the block stripe along its bottom)"
        context.events.emit(.notice("\(context.componentName): no castline test-signal clock in the \(what) after \(missingAfter.configText); is the source castline's test signal?"))
    }

    private func startTimer() {
        guard !timerStarted.load(ordering: .relaxed),
              timerStarted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        FixedBeat.start(every: every) { [weak self] in self?.report() ?? false }
    }

    /// One sample of this period's figures; false once the stage is out of a running pipeline.
    private func report() -> Bool {
        if let element = readings.withLock({ $0.element }) { timeMarks(element: element) }
        let (audio, video, element) = readings.withLock { readings in
            defer { readings.audioLatencies.removeAll(); readings.videoLatencies.removeAll() }
            return (readings.audioLatencies, readings.videoLatencies, readings.element)
        }
        guard let element, element.currentState().current != .null else { return false }
        var figures: [String: Double] = [:]
        let streams = readings.withLock { ($0.audioFormat != nil, $0.video != nil) }
        if streams.0 { figures[Self.audioReads] = Double(audio.count) }
        if streams.1 { figures[Self.videoReads] = Double(video.count) }
        if let audioLatency = audio.median { figures[Self.audioLatency.name] = audioLatency }
        if let videoLatency = video.median {
            figures[Self.videoLatency.name] = videoLatency
            let mean = video.reduce(0, +) / Double(video.count)
            figures[Self.jitter] = (video.reduce(0) { $0 + ($1 - mean) * ($1 - mean) } / Double(video.count)).squareRoot() * 1000
        }
        if let audioLatency = figures[Self.audioLatency.name], let videoLatency = figures[Self.videoLatency.name] {
            figures[Self.avOffset.name] = (audioLatency - videoLatency) * 1000
        }
        if !audio.isEmpty || !video.isEmpty { context.events.emit(.stats(StatsSample(stage: context.componentName, stream: nil, figures: figures))) }
        return true
    }
}
