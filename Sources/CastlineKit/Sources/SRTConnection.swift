import Foundation
import GstKit
import HLS
import Synchronization
import Timing

/// The connection of an srt:// source, in a pipeline of its own (srtsrc into an appsink). Many
/// SRT listeners (ffmpeg's, OBS's) take a single caller: what the stream carries is read from
/// this connection's first bytes (the MPEG-TS program map), and the same connection then feeds
/// the pipeline that plays it, through an appsrc. A connection that fails, or brings nothing for
/// `silenceLimit`, is made again (a fresh srtsrc: 1.22's own reconnect never got media from a
/// listener that came back); nothing for `endAfter` has ended the stream.
final class SRTConnection: Sendable {
    /// Why the stream's head could not be read.
    struct Failure: Error, Sendable {
        let reason: String
    }

    /// The URI, passphrase and all: given to srtsrc only.
    private let uri: String
    private let context: ComponentContext
    private let link: SRTReceiveLink
    private let state: Mutex<State>
    private let watch = Mutex<Task<Void, Never>?>(nil)

    private struct State {
        /// The connection's pipeline now; messages of an earlier one are let go.
        var current: Pipeline?
        /// The bytes read until the program map and each stream's first timestamp are known.
        var head: [UInt8] = []
        var mapSeen: ContinuousClock.Instant?
        var found: Result<SegmentHead, Failure>?
        var waiter: CheckedContinuation<Result<SegmentHead, Failure>, Never>?
        /// Where media goes once the head is known, from the first time it asks for data.
        var feed: AppSrc?
        var feeding = false
        var stopped = false
        /// When the last bytes came, from the head on.
        var lastMedia: ContinuousClock.Instant?
        /// Connections made again since media last came (0: none lost).
        var attempts = 0
        var connecting = false
        /// A failure of the connection being made while it was made: taken up once it is made.
        var pending: (reason: String, pipeline: Pipeline)?
        /// Starts and closes of connections under way, which `stop` waits for.
        var work: [Int: Task<Void, Never>] = [:]
        var nextWork = 0

        mutating func track(_ job: Task<Void, Never>) -> Int {
            nextWork += 1
            work[nextWork] = job
            return nextWork
        }
        /// When the connection now was made: its silence counts from then.
        var connectedAt: ContinuousClock.Instant?
        /// srtsrc's latency (ms): media comes that long after it was sent.
        var latency = 125
        /// Nothing for this long has ended the stream.
        var endAfter: Duration
    }

    /// How long, once the program map is read, its streams' first timestamps are waited for:
    /// a map may list a stream that never comes.
    static let mapWait: Duration = .seconds(2)
    /// A live SRT stream brings packets many times a second: this long without any, the peer has gone.
    static let silenceLimit: Duration = .seconds(2)
    /// What the feed holds at most: seconds of a high bitrate.
    static let queuedBytes: UInt64 = 16 << 20

    init(uri: String, endAfter: Duration, context: ComponentContext) {
        (self.uri, self.context) = (uri, context)
        state = Mutex(State(endAfter: endAfter))
        link = SRTReceiveLink(stage: context.componentName, events: context.events)
    }

    /// Connects and reads until the streams the program map lists are known: each one's first
    /// timestamp seen, or `mapWait` after the map; a failure or nothing in `timeout` says why.
    func readHead(timeout: Duration) async -> Result<SegmentHead, Failure> {
        if let failure = await connect() { settle(.failure(failure)) }
        let deadline = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.settle(.failure(Failure(reason: "nothing came in \(Int(timeout.components.seconds)) s")))
        }
        defer { deadline.cancel() }
        let outcome = await withCheckedContinuation { continuation in
            let known = state.withLock { state in
                if state.found == nil { state.waiter = continuation }
                return state.found
            }
            if let known { continuation.resume(returning: known) }
        }
        if case .failure = outcome { await stop() }
        return outcome
    }

    /// Feeds `appsrc` (live, stamping what it is given, with srtsrc's latency) from the first time
    /// it asks for data: what came before the pipeline played is not queued up behind it, and
    /// while it does not play (paused) the oldest is let go. A feed before it is ended: a swap's
    /// new source plays on from this connection (see `handOver`).
    func feed(_ appsrc: AppSrc) {
        appsrc.configure(isLive: true, maxBytes: Self.queuedBytes)
        try? appsrc.element.set("do-timestamp", true)
        try? appsrc.element.set("leaky-type", text: "downstream")
        let (latency, before, stopped) = state.withLock { state in
            defer { (state.feed, state.feeding) = (appsrc, false) }
            return (state.latency, state.stopped ? nil : state.feed, state.stopped)
        }
        // Stopped since it was shared: nothing more comes, and the new feed ends at once.
        if stopped { _ = appsrc.endOfStream() }
        try? appsrc.element.set("min-latency", Int64(latency) * 1_000_000)
        // Only the feed now: an ended one's last ask for data must not start the next before it plays.
        appsrc.onNeedData { [weak self, weak appsrc] _ in
            self?.state.withLock { state in
                if let appsrc, state.feed === appsrc { state.feeding = true }
            }
        }
        _ = before?.endOfStream()
    }

    /// A swap's new source, calling the same peer, plays from this connection from now on: many
    /// listeners take a single caller, so a second connection would wait for this one to go.
    func handOver(to appsrc: AppSrc, endAfter: Duration) {
        state.withLock { $0.endAfter = endAfter }
        feed(appsrc)
    }

    /// Stopped (by the source, or quiet for `endAfter`): it feeds nothing more.
    var isStopped: Bool { state.withLock { $0.stopped } }

    /// Stops feeding and ends the feed's stream.
    func end() {
        let feed = state.withLock { state -> AppSrc? in
            defer { state.stopped = true }
            return state.stopped ? nil : state.feed
        }
        feed?.endOfStream()
    }

    /// Ends the feed and closes the connection; returns once every connection ever made is closed
    /// (one a reconnect or an earlier stop is closing too): libsrt still at work as the process
    /// exits crashes it.
    func stop() async {
        end()
        watch.withLock { $0?.cancel() }
        let reading = link.stop()
        settle(.failure(Failure(reason: "stopped")))
        await close(state.withLock { state in defer { state.current = nil }; return state.current })
        for job in state.withLock({ Array($0.work.values) }) { await job.value }
        await reading?.value
    }

    /// A fresh srtsrc into an appsink, playing; nil, or why it could not start.
    private func connect() async -> Failure? {
        let pipeline = Pipeline(name: "\(context.componentName)-srt")
        let start: (id: Int, job: Task<Void, Never>)
        do {
            let source = try Element.make("srtsrc")
            // An error naming the value would show the passphrase it holds.
            do { try source.set("uri", uri) } catch { return Failure(reason: "the URI is refused by GStreamer's srtsrc") }
            try source.set("auto-reconnect", false)
            let latency = source.int("latency")
            state.withLock { $0.latency = latency ?? $0.latency }
            let sink = try AppSink.make()
            try sink.element.set("sync", false)
            try pipeline.add(source, sink.element)
            try source.link(sink.element)
            // Only the connection now feeds: an old one's last samples, as it closes, are not media.
            sink.onSample { [weak self, weak pipeline] sample in
                if let pipeline { self?.received(sample, from: pipeline) }
                return .ok
            }
            // Opened here, not in the task: a close before the task ran must still end it.
            let messages = pipeline.bus.messages()
            Task { [weak self, weak pipeline] in
                for await message in messages {
                    guard let pipeline else { return }
                    self?.handle(message, from: pipeline)
                }
            }
            // Started under the lock: a stop then either waits for the start (libsrt connecting)
            // and closes it, or came first and nothing starts. A failed start posts its reason
            // on the bus, which `handle` reads.
            let started = state.withLock { state -> (id: Int, job: Task<Void, Never>)? in
                guard !state.stopped else { return nil }
                state.current = pipeline
                link.follow(source)
                let job = Task { _ = await onOwnThread { pipeline.setState(.playing) } }
                return (state.track(job), job)
            }
            guard let started else {
                await close(pipeline)
                return Failure(reason: "stopped")
            }
            start = started
        } catch {
            return Failure(reason: "\(error)")
        }
        await start.job.value
        let stopped = state.withLock { state in
            state.work[start.id] = nil
            state.connectedAt = .now
            return state.stopped
        }
        // Stopped while it started: `stop` may have closed it before it played.
        if stopped { await close(pipeline) }
        return nil
    }

    /// Sets `pipeline` to NULL (after a start under way, which may wait for libsrt's connect
    /// timeout), seen by `stop` until it is done.
    private func close(_ pipeline: Pipeline?) async {
        guard let pipeline else { return }
        let job = Task {
            _ = await onOwnThread { pipeline.setState(.null) }
            // Ends the task reading the bus, which would otherwise wait on for good.
            pipeline.bus.finish()
        }
        let id = state.withLock { $0.track(job) }
        await job.value
        state.withLock { $0.work[id] = nil }
    }

    private func received(_ sample: Sample, from pipeline: Pipeline) {
        let taken = state.withLock { state -> (AppSrc?, Int)? in
            guard state.current === pipeline else { return nil }
            state.lastMedia = .now
            defer { state.attempts = 0 }
            guard state.found == nil else { return (state.feeding && !state.stopped ? state.feed : nil, state.attempts) }
            if let bytes = sample.withUnsafeBytes({ Array($0) }) { state.head += bytes }
            return (nil, 0)
        }
        guard let (feed, recovered) = taken else { return }
        if recovered > 0 { context.connection(.reconnected(attempts: recovered)) }
        if let feed {
            feed.pushUnstamped(sample, discont: recovered > 0)
        } else if let head = readingHead() {
            settle(head)
        }
    }

    /// The head once it is known from the bytes so far, nil while more are needed.
    private func readingHead() -> Result<SegmentHead, Failure>? {
        state.withLock { state in
            guard state.found == nil else { return nil }
            guard state.head.count < 188 || state.head.first == 0x47 else {
                return .failure(Failure(reason: "what it sends is not MPEG-TS, the only container castline reads over SRT"))
            }
            guard let head = TransportStreamHead.read(state.head) else {
                return state.head.count > 4 << 20 ? .failure(Failure(reason: "no program map in its first 4 MB")) : nil
            }
            if head.firstPTS.count == head.streams.count { return .success(head) }
            let seen = state.mapSeen ?? .now
            state.mapSeen = seen
            guard seen.duration(to: .now) >= Self.mapWait || state.head.count > 4 << 20 else { return nil }
            return .success(SegmentHead(streams: head.carried, firstPTS: head.firstPTS, firstPCR: head.firstPCR))
        }
    }

    /// The head's outcome, once; the bytes read for it are let go. Known, the connection is watched.
    private func settle(_ outcome: Result<SegmentHead, Failure>) {
        let adopted = state.withLock { state -> (CheckedContinuation<Result<SegmentHead, Failure>, Never>?)? in
            guard state.found == nil else { return nil }
            state.found = outcome
            state.head = []
            state.lastMedia = .now
            defer { state.waiter = nil }
            return .some(state.waiter)
        }
        // Only the outcome that was taken (a deadline's failure may have come first).
        guard let waiter = adopted else { return }
        waiter?.resume(returning: outcome)
        if case .success = outcome {
            watch.withLock { $0 = Task { [weak self] in await self?.watchEverySecond() } }
        }
    }

    /// Before the head is known a failure ends the wait for it; after, the connection is made again.
    private func handle(_ message: BusMessage, from pipeline: Pipeline) {
        let (known, current) = state.withLock { ($0.found != nil, $0.current === pipeline) }
        guard current else { return }
        let reason: String
        switch message {
        case .error(_, let text, let debug, _):
            // libsrt's own reason ("Connection timeout") is in the debug text, after GStreamer's generic one.
            let line = debug?.split(separator: "\n").last.map(String.init) ?? ""
            reason = line.range(of: "Error on SRT socket: ").map { String(line[$0.upperBound...]) } ?? text
        case .endOfStream: reason = "the peer ended the stream"
        default: return
        }
        guard known else { return settle(.failure(Failure(reason: reason))) }
        Task { await reconnect(reason, from: pipeline) }
    }

    /// Each second while playing: quiet for `silenceLimit` is a connection lost, quiet for
    /// `endAfter` (however many connections were tried) ends the stream.
    private func watchEverySecond() async {
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            let (last, stopped, connecting, connected, current, endAfter) = state.withLock {
                ($0.lastMedia, $0.stopped, $0.connecting, $0.connectedAt, $0.current, $0.endAfter)
            }
            guard !stopped, let last else { return }
            let silent = ContinuousClock.now - last
            if silent >= endAfter {
                context.events.emit(.streamEnded(reason: "no new media for \(endAfter.configText)"))
                return await stop()
            }
            if silent >= Self.silenceLimit, !connecting, ContinuousClock.now - max(last, connected ?? last) >= Self.silenceLimit {
                Task { await reconnect("no media for \(Int(silent.seconds)) s", from: current) }
            }
        }
    }

    /// Closes `pipeline`'s connection (if it is still the one now: a failure already acted on is
    /// not acted on again), waits the backoff of the attempt this is, and makes a fresh one; one at
    /// a time.
    private func reconnect(_ reason: String, from pipeline: Pipeline?) async {
        let turn = state.withLock { state -> (Pipeline?, Int)? in
            guard !state.stopped, state.current === pipeline else { return nil }
            guard !state.connecting else {
                // The connection being made failed as it started: taken up once it is made.
                if let pipeline { state.pending = (reason, pipeline) }
                return nil
            }
            state.connecting = true
            state.attempts += 1
            defer { state.current = nil }
            return (state.current, state.attempts)
        }
        guard let (old, attempt) = turn else { return }
        var backoff = Backoff()
        (backoff.initial, backoff.maximum) = (.milliseconds(500), .seconds(5))
        let delay = backoff.delay(attempt: attempt, random: Double.random(in: 0..<1))
        context.connection(.reconnecting(reason: reason, attempt: attempt, delay: delay))
        await close(old)
        if (try? await Task.sleep(for: delay)) != nil, !state.withLock({ $0.stopped }), let failure = await connect(),
           !state.withLock({ $0.stopped }) {
            context.events.emit(.warning("\(context.componentName): \(failure.reason)"))
        }
        let pending = state.withLock { state -> (reason: String, pipeline: Pipeline)? in
            state.connecting = false
            defer { state.pending = nil }
            return state.pending.flatMap { state.current === $0.pipeline ? $0 : nil }
        }
        if let pending { await reconnect(pending.reason, from: pending.pipeline) }
    }
}
