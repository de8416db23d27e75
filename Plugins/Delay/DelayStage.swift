import CastlineKit
import Foundation
import Synchronization

/// Plays the stream a chosen time behind the newest media, and moves that delay
/// while it runs: further back replays history at once, nearer skips ahead.
/// The history is the media as it arrived, encoded (an hour of 128 kbps AAC is
/// ~58 MB), so the stage takes its streams encoded and the builder decodes after.
///
/// Each stream's bin is an appsink into the shared history and an appsrc out
/// of it; one play-out serves every stream, so audio and video jump together.
public final class DelayStage: ControllableStage, TimeShiftingStage, AdjustableStage {
    public static let kind = "delay"
    public static let summary = "play a chosen time behind live, movable while running (history kept encoded)"
    public static let initial = ConfigOption<Duration>("initial", default: .zero, help: "the delay at start, e.g. 10s")
    public static let maxHistory = ConfigOption<Duration>("max", default: .seconds(600), help: "history kept: the most delay there can be, e.g. 1h")
    public static let step = ConfigOption<Duration>("step", default: .seconds(1), help: "what the + and - keys add and remove ([ and ] move ten steps)")
    public static let schema = OptionSchema(initial, maxHistory, step)
    public static let figures = [DelayReport.delayFigure, DelayReport.availableFigure]

    /// The bitrate `max` is checked against before anything starts: a generous
    /// video stream (the stage holds whatever it is given).
    static let estimateBitrate = 8_000_000.0
    /// The options as the pipeline file gives them (a swap may change them in place).
    private struct Options {
        var initial: Duration
        var max: Duration
        var step: Duration
    }
    private let options: Mutex<Options>
    var step: Duration { options.withLock(\.step) }
    let playout: DelayPlayout

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let initial = spec.options[Self.initial]
        let max = spec.options[Self.maxHistory]
        let step = spec.options[Self.step]
        guard max > .zero else { throw BuildError("max must be more than 0s (e.g. 10m)", at: "\(spec.keyPath).max") }
        guard initial <= max else {
            throw BuildError("initial \(initial.configText) is more than max \(max.configText) (raise max, or lower initial)",
                             at: "\(spec.keyPath).initial")
        }
        guard step > .zero else { throw BuildError("step must be more than 0s (e.g. 1s)", at: "\(spec.keyPath).step") }
        let bytes = max.seconds * Self.estimateBitrate / 8
        let memory = Double(ProcessInfo.processInfo.physicalMemory)
        if bytes > memory / 2 {
            throw BuildError(String(format: "max %@ would hold about %.1f GB at %.0f Mbit/s, over half this machine's %.1f GB (lower max)",
                                    max.configText, bytes / 1e9, Self.estimateBitrate / 1e6, memory / 1e9),
                             at: "\(spec.keyPath).max")
        }
        options = Mutex(Options(initial: initial, max: max, step: step))
        playout = DelayPlayout(initial: initial, max: max, name: context.componentName, events: context.events,
                               playoutHold: context.playoutHold)
    }

    public func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan {
        .process(takes: .encoded([]))
    }

    public func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin {
        let bin = Bin(name: name)
        let sink = try AppSink.make(name: "\(name)-history")
        // Takes each unit as it comes (until an HLS source asks for the clock, below):
        // the history, not the clock, holds it back.
        try sink.element.set("sync", false)
        try sink.element.set("async", false)
        // Not an end of the pipeline: its end-of-stream is the appsrc's to pass on.
        sink.element.unsetSinkFlag()
        let source = try AppSrc.make(name: "\(name)-playout")
        // Live: nothing waits for the first unit, which may come `initial` later.
        source.configure(isLive: true, format: true)
        try bin.add(sink.element, source.element)
        try bin.ghost(sink.element.staticPad("sink"), as: "sink")
        try bin.ghost(source.element.staticPad("src"), as: "src")
        let index = playout.register(input: sink.element, output: source, stream: stream)
        let playout = playout
        // What plays out is told in the stream's own time, as it came in (see `StreamTimeQuery`).
        if let pad = source.element.staticPad("src") {
            StreamTimeQuery.answer(at: pad) { [weak playout] question in
                playout?.streamTime(stream: index, outputRunningTime: question.runningTime, latency: question.latency)
            }
        }
        if let pad = sink.element.staticPad("sink") {
            Self.askForHistory(at: pad, playout: playout)
            if let out = source.element.staticPad("src") { Self.passLatency(from: pad, at: out) }
        }
        sink.onSample({ sample in
            playout.arrived(sample, stream: index)
            return .ok
        }, endOfStream: {
            playout.ended(stream: index)
        })
        return bin
    }

    /// Tells the source how much history the stage wants when the stream starts,
    /// and listens for its answer (see `SourceTimingEvents`): an HLS source paces
    /// its media by the live edge, so it is taken on the clock (as a player takes
    /// it, which keeps the source's buffering meaningful), `start-back` early
    /// when the source started that far back in its playlist. A source that does
    /// not answer is taken as fast as it comes. A live HLS source then sends its
    /// live-edge estimates (see `DelayPlayout`).
    private static func askForHistory(at pad: Pad, playout: DelayPlayout) {
        pad.addProbe(.eventDownstream) { info in
            guard let event = info.event else { return .ok }
            if let offer = SourceTimingEvents.offer(in: event) {
                if let appsink = info.pad?.parentElement {
                    try? appsink.set("ts-offset", -Int64(clamping: offer.startBack))
                    try? appsink.set("sync", true)
                }
                playout.sourceStartedBack(offer.startBack, restamped: offer.restamped, liveEdge: offer.liveEdge)
                return .drop
            } else if let edge = SourceTimingEvents.liveEdge(in: event) {
                playout.liveEdgeEstimated(edge)
                return .drop
            }
            return .ok
        }
    }

    /// The play-out answers the latency query with what is upstream of the history (a WebRTC
    /// jitter buffer's 200 ms): the sinks still wait that out, so the delay adds to the undelayed
    /// play's latency rather than taking it in.
    private static func passLatency(from history: Pad, at playout: Pad) {
        playout.addProbe([.queryUpstream, .push]) { info in
            guard let query = info.query, query.isLatency else { return .ok }
            let upstream = history.upstreamLatency
            query.setLatency(live: true, min: upstream?.live == true ? upstream?.min ?? .zero : .zero, max: nil)
            return .handled
        }
    }

    public static let commands = [DelayReport.command]

    /// The most history it keeps: what a source may be able to give it at once.
    public var historyWanted: Duration? { playout.history.maxDuration }

    public var playsOutOnItsOwnClock: Bool { true }

    public func pausePlayout() { playout.pause() }
    public func resumePlayout() -> StageEvent? { playout.resume() }
    public func retire() { playout.retire() }

    /// A changed delay stage keeps its history: a new `initial` is asked for as the delay
    /// (clamped to what is held), a new `max` keeps that much from now on, a new `step` steps.
    public func canAdjust(to replacement: any Stage) -> Bool { replacement is DelayStage }

    public func adjust(to replacement: any Stage) {
        guard let fresh = (replacement as? DelayStage)?.options.withLock({ $0 }) else { return }
        let was = options.withLock { options in defer { options = fresh }; return options }
        if fresh.max != was.max { playout.history.resize(to: fresh.max) }
        if fresh.initial != was.initial { _ = playout.request(fresh.initial) }
    }

    public func perform(_ command: String, _ adjustment: StageAdjustment) -> StageEvent? {
        guard command == DelayReport.command.name else { return nil }
        switch adjustment {
        case .set(let seconds): return playout.request(.milliseconds(Int64((seconds * 1000).rounded())))
        case .step(let steps): return playout.request(playout.requested + step * steps, bySteps: true)
        }
    }
}
