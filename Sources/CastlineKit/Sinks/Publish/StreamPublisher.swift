// The publish's one phase machine and what it keeps across connections share one State under
// one lock. Watching the connection is in +Connection, the status line in +Reports, the end and
// its verdict in +Finish, building the pipeline in `PublishingPipeline`, how samples enter it in
// `PublishFeed`, what the far end says in `PublishOutput`.
import Timing
import Foundation
import GstKit
import Synchronization

/// Publishes encoded streams (over RTMP, SRT or WHIP, see `PublishOutput`) in a pipeline of its
/// own, fed from the main pipeline's appsinks. rtmp2sink does not reconnect, and a network
/// sink's errors would stop the live sources if it sat in the main pipeline; here a failure
/// tears down only this pipeline, and a new one is built after a backoff, resuming on a
/// keyframe with the main pipeline's (monotonic) timestamps.
final class StreamPublisher: Sendable {
    struct Settings: Sendable {
        let output: any PublishOutput
        var displayURL: String { output.displayURL }
        let streams: Set<StreamKind>
        let maxReconnects: Int?
        let backoff: Backoff
        /// The caps each stream has where it enters the main pipeline (what FLV's metadata says).
        var streamCaps: @Sendable () -> [StreamKind: Caps] = { [:] }
    }

    enum Phase {
        /// The next sample has the publishing pipeline built.
        case ready
        /// The publishing pipeline is being built and started on `queue`; samples wait in `pending`.
        case starting(generation: Int)
        case publishing(generation: Int)
        case waitingToRetry
        case finished

        /// The pipeline this phase is about, while one is starting or publishing.
        var live: Int? {
            switch self {
            case .starting(let generation), .publishing(let generation): generation
            case .ready, .waitingToRetry, .finished: nil
            }
        }
    }

    struct State {
        var phase = Phase.ready
        var generation = 0
        var pipeline: Pipeline?
        var output: Element?
        var feed: (any PublishFeed)?
        /// Samples that came while the pipeline started, pushed in order once it plays.
        var pending: [(StreamKind, Sample)] = []
        /// What connections that have ended sent and had confirmed.
        var earlier = PublishCounters()
        /// The counters last shown: none of them may go back.
        var shown = PublishCounters()
        var lastSent: UInt64 = 0
        var reporting = false
        var needKeyframe = true
        var everConnected = false
        /// Since when the far end has had the stream, as the output reports it (nil: not now).
        var connectedSince: ContinuousClock.Instant?
        /// When the first publishing pipeline was launched: how long a publish that never connected waited.
        var launchedAt: ContinuousClock.Instant?
        var failedAttempts = 0
        /// What the last attempt's failure said (nil: nothing answered in time), for a publish that never connected.
        var lastFailure: String?
        /// When a connection that was up failed, while no later one has come up.
        var lostAt: ContinuousClock.Instant?
        /// When a sample last came to be sent, and whether the far end of this connection takes them.
        var mediaCame: ContinuousClock.Instant?
        var farEnd = FarEndWatch()
        /// The running time of the first and the latest sample let through to this connection's
        /// pipeline before it first connected: what waited goes out once it has (nil once counted).
        var firstMedia: ClockTime?
        var latestMedia: ClockTime?
        var waitingCounted = false
        var reconnects = 0
        var publishedTime: Duration = .zero
        /// The end-of-stream has passed the publishing pipeline (rtmp2sink has unpublished), it failed,
        /// or the drain timed out: `finish` waits no longer.
        var drainOver = false
        var drainWaiter: CheckedContinuation<Void, Never>?

        /// Published time so far, the connection up now included.
        var publishedSoFar: Duration {
            publishedTime + (connectedSince.map { ContinuousClock.now - $0 } ?? .zero)
        }

        /// The far end no longer has the stream (since `at`, when it is known to have gone
        /// earlier than now): the time it had it is kept.
        mutating func disconnected(at: ContinuousClock.Instant? = nil) {
            if let connectedSince, let at { publishedTime += max(.zero, at - connectedSince) } else { publishedTime = publishedSoFar }
            connectedSince = nil
        }
    }

    /// What `accept` does once it has let go of the lock.
    private enum Step {
        case drop
        case push((any PublishFeed)?)
        /// The first sample: the pipeline of this generation is to be built (it waits in `pending`).
        case launch(generation: Int)
    }

    /// What an output posts when everything before the end-of-stream has gone out, where no
    /// sink of its own ends with it (webrtcbin sends as it is given, and keeps the end to itself).
    static let drainedMessage = "castline-publish-drained"

    /// A publish that had no answer in less than this is not blamed on the server: connecting
    /// to a distant ingest (TCP, TLS, RTMP's handshake and commands) takes a second or so.
    static let shortestJudged: Duration = .seconds(2)

    /// At most this many samples wait for the pipeline to start (about ten seconds of 30 fps video
    /// and AAC; starting takes milliseconds): past it they are dropped and the publish starts on a
    /// later keyframe.
    private static let pendingLimit = 1_000

    let settings: Settings
    let context: ComponentContext
    let state = Mutex(State())
    /// Builds, starts and tears down publishing pipelines, one change at a time, off the main
    /// pipeline's streaming threads and the runner, and never under `state`'s lock.
    let queue = DispatchQueue(label: "castline.rtmp-publisher")
    /// Asks the encoder upstream for a keyframe, so a new connection starts cleanly.
    private let requestKeyframe: @Sendable () -> Void

    /// The main pipeline's clock and base time, once it plays: the publishing pipeline runs on
    /// them, so the running time its buffers carry is its own too (a reconnect starts it late).
    private let mainTiming: @Sendable () -> (Clock, ClockTime)?

    init(settings: Settings, context: ComponentContext, requestKeyframe: @escaping @Sendable () -> Void,
         mainTiming: @escaping @Sendable () -> (Clock, ClockTime)? = { nil }) {
        self.settings = settings
        self.context = context
        self.requestKeyframe = requestKeyframe
        self.mainTiming = mainTiming
    }

    /// From the main pipeline's streaming threads. Always accepts: the main
    /// pipeline must keep running whatever the connection does. Never waits:
    /// the first sample only has the publishing pipeline built on `queue`.
    /// The publishing pipeline as it would be built, not started, its key shown as `****`.
    func unstartedPipeline() -> Pipeline? {
        try? PublishingPipeline(settings: settings, generation: 0, picture: true).pipeline
    }

    func accept(_ sample: Sample, on stream: StreamKind) {
        let step: Step = state.withLock { state in
            var launch: Int?
            switch state.phase {
            case .waitingToRetry, .finished:
                return .drop
            case .ready:
                state.launchedAt = state.launchedAt ?? .now
                state.generation += 1
                state.phase = .starting(generation: state.generation)
                state.needKeyframe = true
                state.pending = []
                (state.firstMedia, state.latestMedia, state.waitingCounted) = (nil, nil, false)
                launch = state.generation
            case .starting, .publishing:
                break
            }
            guard passesKeyframeGate(&state, sample, on: stream) else { return launch.map { .launch(generation: $0) } ?? .drop }
            // Media to be sent: what the write-stall check goes by (not samples waiting for a keyframe).
            state.mediaCame = .now
            // Only until this pipeline first connected: from then on the connection's own time counts.
            if !state.waitingCounted, let time = sample.runningTime.pts {
                state.firstMedia = state.firstMedia ?? time
                state.latestMedia = max(state.latestMedia ?? time, time)
            }
            if case .starting = state.phase {
                if state.pending.count < Self.pendingLimit {
                    state.pending.append((stream, sample))
                } else {
                    // Dropping from the middle would leave frames without their reference: start over at a keyframe.
                    state.pending = []
                    state.needKeyframe = true
                    (state.firstMedia, state.latestMedia) = (nil, nil)
                }
                return launch.map { .launch(generation: $0) } ?? .drop
            }
            return .push(state.feed)
        }
        switch step {
        case .drop: break
        case .push(let feed): feed?.push(sample, on: stream)
        case .launch(let generation): queue.async { [self] in launch(generation: generation) }
        }
    }

    /// A connection starts on a keyframe: video first when there is video.
    private func passesKeyframeGate(_ state: inout State, _ sample: Sample, on stream: StreamKind) -> Bool {
        guard state.needKeyframe else { return true }
        if stream == .video, !sample.isDelta {
            state.needKeyframe = false
            return true
        }
        if stream == .video || settings.streams.contains(.video) { return false }
        state.needKeyframe = false
        return true
    }

    // MARK: - The publishing pipeline

    /// On `queue`: builds the pipeline of `generation`, sets it playing, then pushes what
    /// waited meanwhile and lets samples through. Gives up quietly if the publish was
    /// finished (or failed) meanwhile.
    private func launch(generation: Int) {
        let built: PublishingPipeline
        do {
            built = try PublishingPipeline(settings: settings, generation: generation, requestKeyframe: requestKeyframe)
        } catch {
            let change: ConnectionChange? = state.withLock { state in
                guard case .starting(generation) = state.phase else { return nil }
                state.phase = .finished
                state.pending = []
                return .failed("cannot build the \(settings.output.scheme) publisher: \(error)")
            }
            if let change { context.connection(change) }
            return
        }
        let adopted: Bool = state.withLock { state in
            guard case .starting(generation) = state.phase else { return false }
            state.pipeline = built.pipeline
            state.output = built.output
            state.feed = built.feed
            if !state.reporting {
                state.reporting = true
                reportEverySecond()
            }
            return true
        }
        guard adopted else { return }  // never set playing: nothing to tear down
        watch(built.pipeline, generation: generation)
        if let (clock, baseTime) = mainTiming() { built.pipeline.shareTiming(clock: clock, baseTime: baseTime) }
        _ = built.pipeline.setState(.playing)
        // What waited goes first, in order; samples then go straight through. Pushed
        // outside the lock, a batch at a time, until none is left at the flip.
        while true {
            let batch: [(StreamKind, Sample)]? = state.withLock { state in
                guard case .starting(generation) = state.phase else { return nil }
                guard !state.pending.isEmpty else {
                    state.phase = .publishing(generation: generation)
                    return nil
                }
                defer { state.pending = [] }
                return state.pending
            }
            guard let batch else { return }
            for (stream, sample) in batch { built.feed.push(sample, on: stream) }
        }
    }

    private func watch(_ pipeline: Pipeline, generation: Int) {
        let bus = pipeline.bus
        Task { [weak self] in
            for await message in bus.messages() {
                guard let self else { return }
                switch message {
                case .error(_, let text, _, _):
                    self.failed(generation: generation, reason: text)
                    self.endDrain(generation: generation)  // nothing more will drain
                    return
                case .stateChanged(let source, _, .playing, _) where source == pipeline.name:
                    self.observeConnection(generation: generation)
                case .endOfStream:
                    self.endDrain(generation: generation)
                    return
                case .application(_, let structure) where structure.name == Self.drainedMessage:
                    self.endDrain(generation: generation)
                    return
                default:
                    continue
                }
            }
        }
    }

    /// An attempt ended: `reason` from the output's error, nil when nothing answered in time;
    /// `since`: when the far end stopped taking the stream, where that was earlier than now.
    func failed(generation: Int, reason given: String?, since: ContinuousClock.Instant? = nil) {
        let reason = given ?? "no answer in \(Int(Self.connectTimeout.seconds)) s"
        let (pipeline, output, change, retryAfter): (Pipeline?, Element?, ConnectionChange?, Duration?) = state.withLock { state in
            guard state.phase.live == generation else { return (nil, nil, nil, nil) }
            let (pipeline, output) = (state.pipeline, state.output)
            state.pending = []
            state.earlier = counters(&state)
            state.pipeline = nil
            state.output = nil
            state.feed = nil
            // A connection that was up: the time its far end was no longer taking the stream is not published time.
            let quiet = since ?? (state.connectedSince != nil ? state.farEnd.quietSince(mediaCame: state.mediaCame, at: .now) : nil)
            state.disconnected(at: quiet)
            if let given, let refusal = settings.output.refusal(in: given) {
                state.phase = .finished
                return (pipeline, output, .failed(refusal), nil)
            }
            // Never connected: one destination fails at once (a wrong URL is said now); one of
            // several keeps trying while the others go on (an ingest that blipped at the start).
            guard state.everConnected || context.destinations() > 1 else {
                state.phase = .finished
                return (pipeline, output, .failed(settings.output.neverConnected(reason: given, waited: state.launchedAt.map { .now - $0 } ?? .zero)), nil)
            }
            state.failedAttempts += 1
            state.lastFailure = given
            state.lostAt = state.lostAt ?? quiet ?? .now
            if let limit = settings.maxReconnects, state.failedAttempts > limit {
                state.phase = .finished
                let before = String(format: " (published %.1f s before)", state.publishedTime.seconds)
                return (pipeline, output, .failed("gave up after \(limit) reconnect attempts to \(settings.displayURL): \(reason)" + before), nil)
            }
            state.phase = .waitingToRetry
            let delay = settings.backoff.delay(attempt: state.failedAttempts, random: Double.random(in: 0..<1))
            let told = state.everConnected ? reason : ConnectionChange.notYetConnected + reason
            return (pipeline, output, .reconnecting(reason: told, attempt: state.failedAttempts, delay: delay), delay)
        }
        if let pipeline {
            queue.async { [settings] in
                _ = pipeline.setState(.null)
                if let output { settings.output.closed(output) }
            }
        }
        if let change { context.connection(change) }
        guard let retryAfter else { return }
        Task { [weak self] in
            try? await Task.sleep(for: retryAfter)
            self?.retry()
        }
    }

    private func retry() {
        let ready: Bool = state.withLock { state in
            guard case .waitingToRetry = state.phase else { return false }
            state.phase = .ready
            return true
        }
        if ready { requestKeyframe() }
    }
}
