import CastlineKit
import Foundation
import Synchronization

/// Measures what flows past it and passes the media on untouched: per stream,
/// buffers, bytes, bitrate, position, gaps, discontinuities and jitter; audio
/// levels and silences on raw audio; frame rate and late frames on video.
/// Several may sit in one pipeline, each reporting under its own name.
public final class StatsStage: Stage {
    public static let kind = "stats"
    public static let measuresStreams = true
    public static let summary = "measure bitrate, position, levels, silences and frame rate; media passes untouched"
    public static let every = ConfigOption<Duration>("every", default: .seconds(1), help: "how often to report figures")
    public static let silenceBelow = ConfigOption<Double>("silence-below", .double(-150...0), default: -60,
                                         help: "raw audio below this RMS level (dBFS) counts as silent")
    public static let silenceAfter = ConfigOption<Duration>("silence-after", default: .seconds(5),
                                           help: "report a silence once audio has been silent this long")
    public static let schema = OptionSchema(every, silenceBelow, silenceAfter)
    /// Per stream: silences so far, the sound's level, frames per second, bytes so far.
    public static let silences = Figure("silences", label: "silences", meaning: .silences)
    public static let level = Figure("rms_dbfs", label: "level (RMS)", meaning: .level)
    public static let frameRate = Figure("fps", label: "frames per second", meaning: .frameRate)
    public static let bytes = Figure("bytes", label: "bytes", meaning: .bytes)
    public static let figures = [silences, level, frameRate, bytes]

    let every: Duration
    let silenceBelow: Double
    let silenceAfter: Duration
    private let context: ComponentContext
    private let probes = Mutex<[StreamKind: StreamProbe]>([:])
    /// Read on every buffer: an atomic, so the common case costs one load.
    private let timerStarted = Atomic(false)
    /// The pipeline's latency (ns) at the last report: what a stream's last sample places what is heard by.
    private let lastLatency = Atomic<UInt64>(0)
    /// Silences are told when the sound they were heard in plays.
    private let played = PlayTimeGate()
    /// The stage this one replaced in a swap, until its totals are carried on (at the first report).
    private let predecessor = Mutex<StatsStage?>(nil)
    private let retired = Atomic(false)

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        every = spec.options[Self.every]
        silenceBelow = spec.options[Self.silenceBelow]
        silenceAfter = spec.options[Self.silenceAfter]
        self.context = context
        guard every >= .milliseconds(10) else {
            throw BuildError("must be at least 10ms (try 1s)", at: "\(spec.keyPath).every")
        }
    }

    /// Every stream, in whatever form it arrives: counting needs no conversion,
    /// and converting would change what is being measured.
    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        .process(takes: .any)
    }

    /// Levels and silences need the samples: where the pipeline decodes the sound after this
    /// stage anyway, it is decoded right after it, and the levels are read there (the bitrate
    /// stays the stream's own).
    public func learnsMoreDecoded(_ stream: StreamKind) -> Bool { stream == .audio }

    public func watch(decoded pad: Pad, for stream: StreamKind) {
        guard let probe = probes.withLock({ $0[stream] }) else { return }
        probe.readLevels(from: .decoded)
        pad.addProbe([.buffer, .eventDownstream]) { [weak self, weak probe] info in
            guard let self, let probe else { return .ok }
            if let buffer = info.buffer {
                if let change = probe.recordDecoded(buffer) { self.say(change, on: stream, probe: probe, pts: buffer.pts) }
            } else if let event = info.event, event.kind == .caps {
                probe.handle(event, decoded: true)
            }
            return .ok
        }
    }

    /// `silence` or `sound` on a stream, with the silences counted on it so far, once the buffer at `pts` plays.
    private func say(_ change: SoundChange, on stream: StreamKind, probe: StreamProbe, pts: ClockTime?) {
        let (stage, silences, events) = (context.componentName, probe.silences, context.events)
        played.offer(runningTime: probe.runningTime(of: pts)) {
            events.emit(.stage(StageEvent(stage: stage, stream: stream, name: change.rawValue, fields: [:],
                                          figures: [Self.silences.name: Double(silences)],
                                          line: "\(change) on \(stream) (\(stage))")))
        }
    }

    /// An `identity` with a probe on its output. Raw audio levels are read from
    /// the samples in their own format (F32/F64/S16/S32 little-endian), which
    /// costs one pass over the samples and no copy or conversion.
    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        let identity = try ElementCatalog.make("identity")
        // No sync, no checks: identity only gives the probe a place to sit.
        try identity.set("silent", true)
        let probe = StreamProbe(
            stream: stream, element: identity, levels: stream == .audio && input == .raw ? .passing : .none,
            silence: SilenceDetector(threshold: silenceBelow, after: silenceAfter))
        probes.withLock { $0[stream] = probe }
        played.timed(by: identity)
        // The src pad sees single buffers even when upstream pushes lists (identity splits them).
        identity.staticPad("src")?.addProbe([.buffer, .eventDownstream]) { [weak self, weak probe] info in
            guard let self, let probe else { return .ok }
            if let buffer = info.buffer {
                if let change = probe.record(buffer, held: self.context.playoutHold.outputShift) {
                    self.say(change, on: stream, probe: probe, pts: buffer.pts)
                }
                self.startTimer()
            } else if let event = info.event {
                probe.handle(event, decoded: false)
                if event.kind == .eos {
                    // What was heard and waits to play is told now: nothing more plays after the end.
                    self.played.flush()
                    self.reportEnd(of: probe)
                }
            }
            return .ok
        }
        return try BinChain.make(name, [identity])
    }

    public func succeed(_ predecessor: any Stage) {
        guard let stats = predecessor as? StatsStage else { return }
        self.predecessor.withLock { $0 = stats }
    }

    /// Each stream's counts so far, carried on by a successor: with its own predecessor's while
    /// it has not taken them yet (a second swap within `every` of the first).
    private var totals: [StreamKind: [String: Double]] {
        var totals = probes.withLock { $0 }.mapValues(\.totals)
        for (stream, counts) in predecessor.withLock({ $0 })?.totals ?? [:] {
            totals[stream] = (totals[stream] ?? [:]).merging(counts, uniquingKeysWith: +)
        }
        return totals
    }

    /// Out of the pipeline: no more samples (one after its successor's first would read as counts going back).
    public func retire() {
        retired.store(true, ordering: .relaxed)
    }

    /// One timer per stage, from its first buffer: figures then line up with media flowing.
    private func startTimer() {
        guard !timerStarted.load(ordering: .relaxed),
              timerStarted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged else { return }
        FixedBeat.start(every: every) { [weak self] in self?.report() ?? false }
    }

    /// Emits one sample per stream and one pipeline-wide; false once there is nothing left to watch.
    private func report() -> Bool {
        guard !retired.load(ordering: .relaxed) else { return false }
        carryPredecessor()
        let current = probes.withLock { Array($0.values) }.sorted { $0.stream < $1.stream }
        let now = UInt64(MonotonicTime.now())
        // What a sink renders now lies the pipeline's latency behind the clock's running time.
        let pipeline = current.first?.element.pipeline
        let latency = pipeline?.queryLatency()
        if let latency { lastLatency.store(latency.min.nanoseconds, ordering: .relaxed) }
        var running = false
        for probe in current {
            let position = probe.heardPosition(latency: latency?.min.nanoseconds ?? 0)
            guard probe.emitSample(now: now, final: false, position: position, emit: emit) else { continue }
            if probe.isRunning { running = true }
        }
        guard running else { return false }
        if let pipeline {
            context.events.emit(.stats(StatsSample(
                stage: context.componentName, stream: nil, figures: Self.pipelineFigures(pipeline, latency: latency))))
        }
        return true
    }

    /// A stream's last sample, as its end passes (on its streaming thread): the run stops on the
    /// end, before the next beat, and the totals must hold all that passed. The latency is the
    /// last report's (a query from here could wait on this very thread).
    private func reportEnd(of probe: StreamProbe) {
        guard !retired.load(ordering: .relaxed) else { return }
        carryPredecessor()
        let position = probe.heardPosition(latency: lastLatency.load(ordering: .relaxed))
        _ = probe.emitSample(now: UInt64(MonotonicTime.now()), final: true, position: position, emit: emit)
    }

    private func emit(_ stream: StreamKind, _ figures: [String: Double]) {
        context.events.emit(.stats(StatsSample(stage: context.componentName, stream: stream, figures: figures)))
    }

    /// The predecessor's parts drained before this stage's first buffer came: its counts are final,
    /// and carried on (once) before this stage's first sample.
    private func carryPredecessor() {
        guard let predecessor = predecessor.withLock({ predecessor in defer { predecessor = nil }; return predecessor }) else { return }
        let carried = predecessor.totals
        probes.withLock { probes in for (stream, probe) in probes { probe.carry(carried[stream] ?? [:]) } }
    }

    /// Figures only the whole pipeline knows; `latency` is its latency query's answer.
    static func pipelineFigures(_ pipeline: Pipeline, latency: (live: Bool, min: ClockTime, max: ClockTime?)?) -> [String: Double] {
        var figures: [String: Double] = [:]
        if let latency {
            figures["live"] = latency.live || pipeline.hasLiveSource ? 1 : 0
            figures["latency_ms"] = Double(latency.min.nanoseconds) / 1e6
        }
        if let running = pipeline.runningTime ?? pipeline.pausedRunningTime { figures["running_time_s"] = Double(running.nanoseconds) / 1e9 }
        return figures
    }
}

/// One stream at one stats stage: the meter behind a lock, and what the caps said.
final class StreamProbe: Sendable {
    /// Where a stream's levels are read: from what passes (raw audio), from the decoder right
    /// after the stage (encoded audio the pipeline decodes anyway), or nowhere.
    enum LevelSource: Sendable { case none, passing, decoded }

    let stream: StreamKind
    let element: Element
    private let state: Mutex<State>

    private struct State {
        var levels: LevelSource
        var meter: StreamMeter
        var silence: SilenceDetector
        var format: SampleFormat?
        var bytesPerSecond = 0
        var segment: SegmentInfo?
        /// The running time the last buffer that passed ends at: what is heard is not past it.
        var passedUntil: UInt64?
        /// What the stage this one replaced counted (`StreamMeter.cumulative`), added to this one's.
        var carried: [String: Double] = [:]
        /// The sample at the stream's end has gone: none follows it.
        var finalSent = false

        /// Feeds a measured buffer to the silence detector; a change to announce, if any.
        mutating func silence(of measured: (level: AudioLevel, bytesPerSecond: Int), buffer: BufferFacts) -> SoundChange? {
            guard let rms = measured.level.rmsDBFS else { return nil }
            // A gap buffer is silence whatever its bytes hold (audiotestsrc flags its muted buffers so).
            let duration = buffer.duration.map { Duration.nanoseconds(Int64(clamping: $0)) }
                ?? (measured.bytesPerSecond > 0 ? .seconds(Double(buffer.size) / Double(measured.bytesPerSecond)) : .zero)
            return silence.feed(rmsDBFS: buffer.isGap ? AudioLevel.floor : rms, duration: duration)
        }
    }

    init(stream: StreamKind, element: Element, levels: LevelSource, silence: SilenceDetector) {
        self.stream = stream
        self.element = element
        state = Mutex(State(levels: levels, meter: StreamMeter(stream: stream), silence: silence))
    }

    func readLevels(from source: LevelSource) {
        state.withLock { $0.levels = source }
    }

    /// The running time of `pts` in this stage's segment: when it plays.
    func runningTime(of pts: ClockTime?) -> ClockTime? {
        pts.flatMap { pts in state.withLock(\.segment)?.runningTime(of: pts) }
    }

    /// From the streaming thread; returns a silence change to announce. `held`: what the run's
    /// time-shifts add to the time of what they play out (`PlayoutHold.outputShift`).
    func record(_ buffer: BufferView, held: Int64?) -> SoundChange? {
        let facts = BufferFacts(
            pts: buffer.pts?.nanoseconds, dts: buffer.dts?.nanoseconds, duration: buffer.duration?.nanoseconds,
            size: buffer.size, isDiscont: buffer.isDiscont, isGap: buffer.isGap, arrival: UInt64(MonotonicTime.now()), held: held,
            baseTime: element.baseTime?.nanoseconds)
        let level = measure(buffer, from: .passing)
        return state.withLock { state in
            // Before its segment starts it is no media: a recording has none of it.
            if let pts = buffer.pts, state.segment?.isBeforeStart(pts) == true { return nil }
            state.meter.record(facts, level: level?.level)
            if let pts = buffer.pts, let end = state.segment?.runningTime(of: pts + (buffer.duration ?? .zero)) {
                state.passedUntil = max(state.passedUntil ?? 0, end.nanoseconds)
            }
            return level.flatMap { state.silence(of: $0, buffer: facts) }
        }
    }

    /// From the decoder after the stage: the levels of what `record` counted encoded.
    func recordDecoded(_ buffer: BufferView) -> SoundChange? {
        guard let level = measure(buffer, from: .decoded) else { return nil }
        let facts = BufferFacts(pts: nil, dts: nil, duration: buffer.duration?.nanoseconds, size: buffer.size,
                                isGap: buffer.isGap, arrival: 0)
        return state.withLock { state in
            state.meter.recordLevel(level.level)
            return state.silence(of: level, buffer: facts)
        }
    }

    /// A buffer's level, when levels are read from `source`; measured outside the lock so the
    /// timer never waits on a pass over the samples.
    private func measure(_ buffer: BufferView, from source: LevelSource) -> (level: AudioLevel, bytesPerSecond: Int)? {
        let (format, bytesPerSecond) = state.withLock { $0.levels == source ? ($0.format, $0.bytesPerSecond) : (nil, 0) }
        guard let format, let level = buffer.withUnsafeBytes({ AudioLevel.measure($0, format: format) }) else { return nil }
        return (level, bytesPerSecond)
    }

    /// `decoded`: the event came from the decoder after the stage, not from what passes.
    func handle(_ event: EventView, decoded: Bool) {
        switch event.kind {
        case .caps:
            let source: LevelSource = decoded ? .decoded : .passing
            guard state.withLock({ $0.levels == source }), let structure = event.caps?.structure(at: 0) else { return }
            let format = structure.string("format").flatMap(SampleFormat.init(caps:))
            let rate = structure.int("rate") ?? 0
            let channels = structure.int("channels") ?? 0
            state.withLock { state in
                state.format = format
                state.bytesPerSecond = (format?.bytesPerSample ?? 0) * rate * channels
            }
        case .segment:
            state.withLock { $0.segment = event.segment }
        case .gap:
            state.withLock { $0.meter.recordGapEvent() }
        case .eos:
            state.withLock { $0.meter.recordEnd() }
        default:
            break
        }
    }

    /// Silences announced on this stream so far.
    var silences: Int { state.withLock { $0.silence.silences + Int($0.carried[StatsStage.silences.name] ?? 0) } }

    /// Takes the interval's figures and hands them to `emit` under the probe's lock, so the
    /// stream's samples go out in order whichever of the timer and the end comes first (counts
    /// never go back). `final`: the one at the stream's end, sent once, and only if buffers came
    /// since the last (that one holds it all). False when nothing went out (no buffer yet, or after
    /// the end's sample).
    func emitSample(now: UInt64, final: Bool, position: Double?, emit: (StreamKind, [String: Double]) -> Void) -> Bool {
        state.withLock { state in
            guard !state.finalSent else { return false }
            if final {
                guard state.meter.ended else { return false }
                state.finalSent = true
                guard state.meter.hasNewBuffers else { return false }
            }
            guard var figures = Self.snapshot(&state, now: now) else { return false }
            figures[StatsFigure.position] = position
            emit(stream, figures)
            return true
        }
    }

    private static func snapshot(_ state: inout State, now: UInt64) -> [String: Double]? {
        guard state.meter.hasStarted else { return nil }
        var figures = state.meter.snapshot(now: now)
        if state.levels != .none { figures[StatsStage.silences.name] = Double(state.silence.silences) }
        return figures.merging(state.carried.filter { figures[$0.key] != nil }, uniquingKeysWith: +)
    }

    /// The counts since the stream began, what was carried included.
    var totals: [String: Double] {
        state.withLock { state in
            guard state.meter.hasStarted else { return state.carried }
            var own = state.meter.counts
            if state.levels != .none { own[StatsStage.silences.name] = Double(state.silence.silences) }
            return own.merging(state.carried, uniquingKeysWith: +)
        }
    }

    /// Counts a predecessor made: added to this probe's from now on.
    func carry(_ counts: [String: Double]) {
        state.withLock { $0.carried = counts.filter { StreamMeter.cumulative.contains($0.key) } }
    }

    /// Where what is heard now lies in the stream, in seconds: the media at the running time the
    /// clock has reached less the pipeline's `latency` (ns), in the stream's own time as the part
    /// that knows it answers (`StreamTimeQuery`: an HLS source's MPEG-TS PTS, a delay's history),
    /// else GStreamer's stream time in this stage's segment (no encoder's 1000-hour offset).
    /// nil until the clock runs and the stream has a segment.
    func heardPosition(latency: UInt64) -> Double? {
        // Paused, what is heard stands where the pipeline paused.
        guard let running = (element.runningTime ?? element.pipeline?.pausedRunningTime)?.nanoseconds, running >= latency,
              let (segment, passedUntil) = state.withLock({ state in state.segment.map { ($0, state.passedUntil) } }) else { return nil }
        // Nothing came (a stall, an outage): what is heard stands at the end of the last buffer.
        let heard = ClockTime(nanoseconds: min(running - latency, passedUntil ?? .max))
        guard let here = segment.streamTime(ofRunningTime: heard)?.nanoseconds else { return nil }
        let question = StreamTimeQuery.Question(stream: stream, runningTime: heard.nanoseconds, segmentTime: here, latency: latency)
        let time = element.staticPad("sink").flatMap { StreamTimeQuery.ask(through: $0, question) } ?? here
        return Double(time) / 1e9
    }

    /// Still worth reporting on: not at its end, and its pipeline not torn down.
    var isRunning: Bool {
        let ended = state.withLock { $0.meter.ended }
        return !ended && element.currentState().current != .null
    }
}
