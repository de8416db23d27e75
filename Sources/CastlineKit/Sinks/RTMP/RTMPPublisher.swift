import HLS
import Foundation
import GstKit
import Synchronization

/// Publishes encoded streams over RTMP in a pipeline of its own, fed from the
/// main pipeline's appsinks. rtmp2sink does not reconnect, and its errors would
/// stop the live sources if it sat in the main pipeline; here a failure tears
/// down only this pipeline, and a new one is built after a backoff, resuming
/// on a keyframe with the main pipeline's (monotonic) timestamps.
final class RTMPPublisher: Sendable {
    struct Settings: Sendable {
        /// What rtmp2sink connects to, key included: never shown.
        let location: @Sendable () throws -> String
        let insecureTLS: Bool
        /// The URL without the key, for messages.
        let displayURL: String
        let streams: Set<StreamKind>
        let maxReconnects: Int?
        let backoff: Backoff
    }

    private enum Phase {
        /// The next sample builds a publishing pipeline.
        case ready
        case publishing(generation: Int)
        case waitingToRetry
        case finished
    }

    private struct State {
        var phase = Phase.ready
        var generation = 0
        var pipeline: Pipeline?
        var output: Element?
        var sources: [StreamKind: AppSrc] = [:]
        /// Bytes sent and acknowledged by connections that have ended.
        var earlierSent: UInt64 = 0
        var earlierAcked: UInt64 = 0
        var lastSent: UInt64 = 0
        var reporting = false
        var needKeyframe = true
        var everConnected = false
        var connectedSince: ContinuousClock.Instant?
        var failedAttempts = 0
        var reconnects = 0
        var publishedTime: Duration = .zero
        /// The publishing pipeline passed end-of-stream: rtmp2sink has unpublished.
        var drained = false
    }

    private let settings: Settings
    private let context: ComponentContext
    private let state = Mutex(State())
    /// Asks the encoder upstream for a keyframe, so a new connection starts cleanly.
    private let requestKeyframe: @Sendable () -> Void

    init(settings: Settings, context: ComponentContext, requestKeyframe: @escaping @Sendable () -> Void) {
        self.settings = settings
        self.context = context
        self.requestKeyframe = requestKeyframe
    }

    /// From the main pipeline's streaming threads. Always accepts: the main
    /// pipeline must keep running whatever the connection does.
    func accept(_ sample: Sample, on stream: StreamKind) {
        let target: AppSrc? = state.withLock { state in
            switch state.phase {
            case .waitingToRetry, .finished:
                return nil
            case .ready:
                do {
                    try start(&state)
                } catch {
                    state.phase = .finished
                    context.connection(.failed("cannot build the RTMP publisher: \(error)"))
                    return nil
                }
            case .publishing:
                break
            }
            if state.needKeyframe {
                let videoFirst = settings.streams.contains(.video)
                if stream == .video, !sample.isDelta {
                    state.needKeyframe = false
                } else if stream == .video || videoFirst {
                    return nil
                } else {
                    state.needKeyframe = false
                }
            }
            return state.sources[stream]
        }
        target?.pushInRunningTime(sample)
    }

    /// Ends the publish: end-of-stream through the publishing pipeline (rtmp2sink
    /// then unpublishes), waiting at most `drain`. Returns a summary line.
    func finish(drain: Duration) -> String {
        let pipeline: Pipeline? = state.withLock { state in
            if case .publishing = state.phase {
                for source in state.sources.values { source.endOfStream() }
            }
            if let since = state.connectedSince { state.publishedTime += ContinuousClock.now - since }
            state.connectedSince = nil
            state.phase = .finished
            return state.pipeline
        }
        if let pipeline {
            let deadline = ContinuousClock.now + drain
            while ContinuousClock.now < deadline, !state.withLock(\.drained) {
                Thread.sleep(forTimeInterval: 0.02)
            }
            pipeline.setState(.null)
        }
        return state.withLock { state in
            state.pipeline = nil
            state.sources = [:]
            let seconds = String(format: "%.1f", state.publishedTime.seconds)
            return "rtmp: published \(seconds) s to \(settings.displayURL), reconnects: \(state.reconnects)"
        }
    }

    // MARK: - The publishing pipeline

    private func start(_ state: inout State) throws {
        state.generation += 1
        let generation = state.generation
        let pipeline = Pipeline(name: "publish-\(generation)")
        let muxer = try ElementCatalog.make("flvmux")
        try muxer.set("streamable", true)
        let output = try ElementCatalog.make("rtmp2sink")
        try output.set("location", text: try settings.location())
        // Timestamps are the main pipeline's running time; pacing happened there.
        try output.set("sync", false)
        if settings.insecureTLS { try output.set("tls-validation-flags", text: "0") }
        try pipeline.add(muxer, output)
        try muxer.link(output)
        var sources: [StreamKind: AppSrc] = [:]
        for stream in settings.streams.sorted() {
            let source = try AppSrc.make(name: stream.rawValue)
            // Not live: the muxer then waits for every stream instead of timing out on the clock.
            source.configure(isLive: false, format: true)
            try source.element.set("max-bytes", UInt64(8_000_000))
            try source.element.set("leaky-type", text: "downstream")
            // No queue after it: appsrc already queues, and pushes from a thread of its own.
            try pipeline.add(source.element)
            guard let pad = muxer.requestPad(stream == .video ? "video" : "audio"), let out = source.element.staticPad("src") else {
                throw BuildError("flvmux gave no \(stream) pad")
            }
            try out.link(pad)
            sources[stream] = source
        }
        state.pipeline = pipeline
        state.output = output
        state.sources = sources
        if !state.reporting {
            state.reporting = true
            reportEverySecond()
        }
        state.needKeyframe = true
        state.phase = .publishing(generation: generation)
        watch(pipeline, generation: generation)
        pipeline.setState(.playing)
    }

    private func watch(_ pipeline: Pipeline, generation: Int) {
        let bus = pipeline.bus
        Task { [weak self] in
            for await message in bus.messages() {
                guard let self else { return }
                switch message {
                case .error(_, let text, _):
                    self.failed(generation: generation, reason: text)
                    return
                case .stateChanged(let source, _, .playing, _) where source == pipeline.name:
                    self.confirmAfterGrace(generation: generation)
                case .endOfStream:
                    self.state.withLock { $0.drained = true }
                    return
                default:
                    continue
                }
            }
        }
    }

    /// A publish counts as up once it has run for a moment without error:
    /// a refused key fails within a few hundred milliseconds.
    private func confirmAfterGrace(generation: Int) {
        Task { [weak self] in
            try? await Task.sleep(for: .milliseconds(1500))
            self?.confirm(generation: generation)
        }
    }

    private func confirm(generation: Int) {
        let change: ConnectionChange? = state.withLock { state in
            guard case .publishing(let current) = state.phase, current == generation,
                  state.connectedSince == nil else { return nil }
            // It has been up since the grace period began.
            state.connectedSince = .now - .milliseconds(1500)
            defer {
                state.everConnected = true
                state.failedAttempts = 0
            }
            guard state.everConnected else { return .connected }
            state.reconnects += 1
            return .reconnected(attempts: state.failedAttempts)
        }
        if let change { context.connection(change) }
    }

    private func failed(generation: Int, reason: String) {
        let (pipeline, change, retryAfter): (Pipeline?, ConnectionChange?, Duration?) = state.withLock { state in
            guard case .publishing(let current) = state.phase, current == generation else { return (nil, nil, nil) }
            let pipeline = state.pipeline
            let (sent, acked) = Self.counters(state.output)
            state.earlierSent += sent
            state.earlierAcked += acked
            state.pipeline = nil
            state.output = nil
            state.sources = [:]
            if let since = state.connectedSince { state.publishedTime += ContinuousClock.now - since }
            state.connectedSince = nil
            if reason.contains("'publish' cmd failed") {
                state.phase = .finished
                return (pipeline, .failed("the server at \(settings.displayURL) refused to publish with this stream key (check the key)"), nil)
            }
            guard state.everConnected else {
                state.phase = .finished
                return (pipeline, .failed("cannot publish to \(settings.displayURL): \(reason) (check the URL and that the server is up)"), nil)
            }
            state.failedAttempts += 1
            if let limit = settings.maxReconnects, state.failedAttempts > limit {
                state.phase = .finished
                return (pipeline, .failed("gave up after \(limit) reconnect attempts to \(settings.displayURL): \(reason)"), nil)
            }
            state.phase = .waitingToRetry
            let delay = settings.backoff.delay(attempt: state.failedAttempts, random: Double.random(in: 0..<1))
            return (pipeline, .reconnecting(reason: reason, attempt: state.failedAttempts, delay: delay), delay)
        }
        pipeline?.setState(.null)
        if let change { context.connection(change) }
        guard let retryAfter else { return }
        Task { [weak self] in
            try? await Task.sleep(for: retryAfter)
            self?.retry()
        }
    }

    /// rtmp2sink's byte counters: sent, and acknowledged by the server.
    private static func counters(_ output: Element?) -> (UInt64, UInt64) {
        guard let stats = output?.structure("stats") else { return (0, 0) }
        return (stats.uint64("out-bytes-total") ?? 0, stats.uint64("out-bytes-acked") ?? 0)
    }

    /// A status line each second while the publish runs: time up, send rate, bytes acknowledged.
    private func reportEverySecond() {
        Task { [weak self] in
            while let self {
                try? await Task.sleep(for: .seconds(1))
                guard let (line, figures) = self.statusLine() else { return }
                self.context.events.emit(.status(line))
                // The same numbers for stats outputs (JSON, metrics, summary).
                self.context.events.emit(.stats(StatsSample(stage: "rtmp", stream: nil, figures: figures)))
            }
        }
    }

    private func statusLine() -> (String, [String: Double])? {
        state.withLock { state -> (String, [String: Double])? in
            if case .finished = state.phase { return nil }
            let (sent, acked) = Self.counters(state.output)
            let totalSent = state.earlierSent + sent
            let rate = Double(totalSent &- state.lastSent) * 8 / 1000
            state.lastSent = totalSent
            var up = state.publishedTime
            if let since = state.connectedSince { up += ContinuousClock.now - since }
            let condition: String
            switch state.phase {
            case .waitingToRetry: condition = "reconnecting"
            case .publishing where state.connectedSince != nil: condition = "publishing"
            default: condition = "connecting"
            }
            let seconds = Int(up.seconds)
            let figures: [String: Double] = [
                StatsFigure.reconnects: Double(state.reconnects),
                StatsFigure.ackedBytes: Double(state.earlierAcked + acked),
                StatsFigure.sentBytes: Double(totalSent),
                StatsFigure.bitrate: condition == "publishing" ? rate : 0,
                "published_s": up.seconds,
            ]
            let line = String(format: "%@ %d:%02d  %.0f kbit/s  %.1f MB acknowledged  reconnects %d",
                          condition, seconds / 60, seconds % 60, condition == "publishing" ? rate : 0,
                          Double(state.earlierAcked + acked) / 1_000_000, state.reconnects)
            return (line, figures)
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
