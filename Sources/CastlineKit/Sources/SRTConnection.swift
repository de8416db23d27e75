import Foundation
import GstKit
import HLS
import Synchronization

/// The one connection of an srt:// source, in a pipeline of its own (srtsrc into an appsink).
/// Many SRT listeners (ffmpeg's, OBS's) take a single caller: what the stream carries is read
/// from this connection's first bytes (the MPEG-TS program map), and the same connection then
/// feeds the pipeline that plays it, through an appsrc.
final class SRTConnection: Sendable {
    /// Why the stream's head could not be read.
    struct Failure: Error, Sendable {
        let reason: String
    }

    let source: Element
    private let pipeline: Pipeline
    private let state = Mutex(State())
    private let stage: String
    private let events: EventEmitter

    private struct State {
        /// The bytes read until the program map and each stream's first timestamp are known.
        var head: [UInt8] = []
        var mapSeen: ContinuousClock.Instant?
        var found: Result<SegmentHead, Failure>?
        var waiter: CheckedContinuation<Result<SegmentHead, Failure>, Never>?
        /// Where media goes once the head is known, from the first time it asks for data.
        var feed: AppSrc?
        var feeding = false
        var stopped = false
    }

    /// How long, once the program map is read, its streams' first timestamps are waited for:
    /// a map may list a stream that never comes.
    static let mapWait: Duration = .seconds(2)

    init(uri: String, stage: String, events: EventEmitter) throws(GstError) {
        (self.stage, self.events) = (stage, events)
        pipeline = Pipeline(name: "\(stage)-srt")
        source = try Element.make("srtsrc")
        // An error naming the value would show the passphrase it holds.
        do { try source.set("uri", uri) } catch { throw GstError.other("srt:// URI refused by GStreamer") }
        let sink = try AppSink.make()
        try sink.element.set("sync", false)
        try pipeline.add(source, sink.element)
        try source.link(sink.element)
        sink.onSample { [weak self] sample in
            self?.received(sample)
            return .ok
        }
    }

    /// Connects and reads until the streams the program map lists are known: each one's first
    /// timestamp seen, or `mapWait` after the map; a failure or nothing in `timeout` says why.
    func readHead(timeout: Duration) async -> Result<SegmentHead, Failure> {
        let pipeline = self.pipeline
        let bus = pipeline.bus
        Task { [weak self] in
            for await message in bus.messages() {
                self?.handle(message)
            }
        }
        guard await onOwnThread({ pipeline.setState(.playing) != .failure }) else {
            return .failure(Failure(reason: "srtsrc did not start"))
        }
        let deadline = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.settle(.failure(Failure(reason: "nothing came in \(Int(timeout.components.seconds)) s")))
        }
        defer { deadline.cancel() }
        return await withCheckedContinuation { continuation in
            let known = state.withLock { state in
                if state.found == nil { state.waiter = continuation }
                return state.found
            }
            if let known { continuation.resume(returning: known) }
        }
    }

    /// Feeds `appsrc` (live, stamping what it is given) from the first time it asks for data:
    /// what came before the pipeline played is not queued up behind it.
    func feed(_ appsrc: AppSrc) {
        appsrc.configure(isLive: true)
        try? appsrc.element.set("do-timestamp", true)
        state.withLock { $0.feed = appsrc }
        appsrc.onNeedData { [weak self] _ in self?.state.withLock { $0.feeding = true } }
    }

    /// Stops feeding and ends the feed's stream.
    func end() {
        let feed = state.withLock { state -> AppSrc? in
            defer { state.stopped = true }
            return state.stopped ? nil : state.feed
        }
        feed?.endOfStream()
    }

    /// Ends the feed and closes the connection.
    func stop() async {
        end()
        settle(.failure(Failure(reason: "stopped")))
        let pipeline = self.pipeline
        _ = await onOwnThread { pipeline.setState(.null) }
        // Ends the task reading the bus, which would otherwise wait on for good.
        pipeline.bus.finish()
    }

    private func received(_ sample: Sample) {
        let feed = state.withLock { state -> AppSrc? in
            guard state.found == nil else { return state.feeding && !state.stopped ? state.feed : nil }
            if let bytes = sample.withUnsafeBytes({ Array($0) }) { state.head += bytes }
            return nil
        }
        if let feed {
            feed.pushUnstamped(sample)
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

    /// The head's outcome, once; the bytes read for it are let go.
    private func settle(_ outcome: Result<SegmentHead, Failure>) {
        let waiter = state.withLock { state -> CheckedContinuation<Result<SegmentHead, Failure>, Never>? in
            guard state.found == nil else { return nil }
            state.found = outcome
            state.head = []
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: outcome)
    }

    /// Before the head is known a failure ends the wait for it; after, it is the pipeline's:
    /// posted from the appsrc, so the run ends as it would with srtsrc in it.
    private func handle(_ message: BusMessage) {
        let (known, feed) = state.withLock { ($0.found != nil, $0.feed) }
        switch message {
        case .error(_, let text, _, _):
            guard known else { return settle(.failure(Failure(reason: text))) }
            feed?.element.postError("\(stage): \(text)")
        case .warning(_, let text, _):
            // Before the head is known, a caller retrying says so at the timeout.
            if known { events.emit(.warning("\(stage) (srtsrc): \(text)")) }
        case .endOfStream:
            guard known else { return settle(.failure(Failure(reason: "the peer ended the stream"))) }
            feed?.endOfStream()
        default:
            break
        }
    }
}
