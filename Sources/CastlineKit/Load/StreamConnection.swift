import Foundation
import GstKit
import Synchronization

/// One connection of a stream viewer, nothing decoded: the source (rtmp2src, srtsrc) and the
/// container's demuxer (flvdemux, tsdemux), or a WHEP session's webrtcbin, into fakesinks. One
/// stream is read for its timestamps: the media that has come, handed on in steps of `step` seconds.
final class StreamConnection: Sendable {
    enum Event: Sendable {
        /// `seconds` more media came, in `bytes`.
        case media(seconds: Double, bytes: Int)
        case failed(String)
        /// The server ended the stream.
        case ended
    }

    /// How much media is handed on at a time: the viewer's buffer is placed to within this.
    static let step = 0.1

    let events: AsyncStream<Event>
    private let pipeline: Pipeline
    private let continuation: AsyncStream<Event>.Continuation
    /// A WHEP connection's session at its endpoint (DELETEd on stop).
    private let session: WHIPSession?

    init(_ stream: StreamViewer.Stream) throws(GstError) {
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        pipeline = Pipeline()
        let reach = MediaReach(continuation)
        switch stream.kind {
        case .rtmp, .srt:
            session = nil
            try Self.demux(stream.kind, location: stream.location, in: pipeline, reach: reach)
        case .whep:
            do {
                session = try Self.receive(stream, in: pipeline, reach: reach, failed: { [continuation] in continuation.yield(.failed($0)) })
            } catch {
                throw error as? GstError ?? GstError.other("\(error)")
            }
        }
        let bus = pipeline.bus
        Task { [continuation] in
            for await message in bus.messages() {
                switch message {
                case .error(_, let text, _, _): continuation.yield(.failed(text))
                case .endOfStream: continuation.yield(.ended)
                default: continue
                }
            }
        }
    }

    /// The source (rtmp2src, srtsrc) into its container's demuxer (flvdemux, tsdemux); the first
    /// stream it exposes is timed, the others stay unlinked (the demuxer goes on while one is linked).
    private static func demux(_ kind: StreamViewer.Kind, location: String, in pipeline: Pipeline, reach: MediaReach) throws(GstError) {
        let source = try Element.make(kind == .rtmp ? "rtmp2src" : "srtsrc")
        // An error naming the value would show the key or passphrase it holds.
        do { try source.set(kind == .rtmp ? "location" : "uri", location) } catch { throw GstError.other("\(kind) URL refused by GStreamer") }
        let demuxer = try Element.make(kind == .rtmp ? "flvdemux" : "tsdemux")
        let sink = try Element.make("fakesink")
        try sink.set("sync", false)
        try sink.set("async", false)
        try pipeline.add(source, demuxer, sink)
        try source.link(demuxer)
        guard let input = sink.staticPad("sink") else { throw GstError.other("fakesink has no sink pad") }
        _ = demuxer.onPadAdded { pad in
            if !input.isLinked { try? pad.link(input) }
        }
        reach.time(input)
        // Bytes as they came, the whole container's (every stream's), not the one stream timed.
        if let entering = demuxer.staticPad("sink") { reach.count(entering) }
    }

    /// webrtcbin, receive-only, offering what a WHEP listen offers, its session negotiated over
    /// HTTP; each stream it brings (RTP, depayloaded by nobody) into a fakesink of its own, the
    /// first one timed by its jitter buffer's stamps.
    private static func receive(_ stream: StreamViewer.Stream, in pipeline: Pipeline, reach: MediaReach,
                                failed: @escaping @Sendable (String) -> Void) throws -> WHIPSession {
        guard let url = URL(string: stream.location) else { throw GstError.other("not a WHEP URL") }
        let certificate = try DTLSCertificate()
        let webrtc = try ICEServers.none.webrtcbin()
        for kind in [StreamKind.video, .audio] {
            if let caps = WHEPLink.receiverCaps[kind] { try webrtc.addReceiver(try Caps(caps)) }
        }
        let session = WHIPSession(protocolName: "WHEP", endpoint: url, token: stream.token, certificate: certificate, webrtc: webrtc,
                                  timeout: .seconds(10), failed: failed)
        let pem = certificate.pem
        webrtc.onDeepElementAdded { element in
            if element.factoryName == "dtlssrtpdec" { try? element.set("pem", pem) }
        }
        try webrtc.connect("on-negotiation-needed") { _ in session.negotiate() }
        let timed = OnceFlag()
        webrtc.onPadAdded { [weak pipeline] pad in
            guard let pipeline, let sink = try? Element.make("fakesink"), (try? sink.set("sync", false)) != nil,
                  (try? sink.set("async", false)) != nil, (try? pipeline.add(sink)) != nil, let input = sink.staticPad("sink") else { return }
            if timed.trip() { reach.time(input) }
            reach.count(input)
            _ = sink.syncStateWithParent()
            try? pad.link(input)
        }
        try pipeline.add(webrtc)
        return session
    }

    /// Adds an event of the caller's (a watch that found the stream quiet).
    func report(_ event: Event) { continuation.yield(event) }

    /// Connects (a state change may block: not on the cooperative pool).
    func start() async -> Bool {
        let pipeline = self.pipeline
        return await onOwnThread { pipeline.setState(.playing) != .failure }
    }

    func stop() async {
        await session?.close()
        let pipeline = self.pipeline
        _ = await onOwnThread { pipeline.setState(.null) }
        // Ends the task reading the bus, which would otherwise hold it and wait on for good.
        pipeline.bus.finish()
        continuation.finish()
    }
}

/// What a connection's timed stream has reached, handed on as `media` events in steps of
/// `StreamConnection.step` seconds, with the bytes that came meanwhile.
private final class MediaReach: Sendable {
    private struct Reach {
        var first: ClockTime?
        var furthest = 0.0
        var pending = 0.0
        var bytes = 0
    }
    private let reach = Mutex(Reach())
    private let continuation: AsyncStream<StreamConnection.Event>.Continuation

    init(_ continuation: AsyncStream<StreamConnection.Event>.Continuation) {
        self.continuation = continuation
    }

    /// The stream whose timestamps say how much media has come.
    func time(_ pad: Pad) {
        _ = pad.addProbe(.buffer) { [self] info in
            guard let buffer = info.buffer, let pts = buffer.pts else { return .ok }
            let step = reach.withLock { reach -> (Double, Int)? in
                let first = reach.first ?? pts
                reach.first = first
                let end = (pts.seconds - first.seconds) + (buffer.duration?.seconds ?? 0)
                reach.pending += max(0, end - reach.furthest)
                reach.furthest = max(reach.furthest, end)
                guard reach.pending >= StreamConnection.step else { return nil }
                defer { (reach.pending, reach.bytes) = (0, 0) }
                return (reach.pending, reach.bytes)
            }
            if let (seconds, bytes) = step { continuation.yield(.media(seconds: seconds, bytes: bytes)) }
            return .ok
        }
    }

    /// Bytes that count as received.
    func count(_ pad: Pad) {
        _ = pad.addProbe(.buffer) { [self] info in
            let size = info.buffer?.size ?? 0
            reach.withLock { $0.bytes += size }
            return .ok
        }
    }
}
