import Foundation
import GstKit
import Synchronization

/// One connection of a stream viewer: the source (rtmp2src, srtsrc) and the container's demuxer
/// (flvdemux, tsdemux) into a fakesink, nothing decoded. The first stream the demuxer exposes is
/// read for its timestamps: the media that has come, handed on in steps of `step` seconds.
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

    /// What the timestamps have reached: the first one, the furthest end, what is not handed on yet.
    private struct Reach {
        var first: ClockTime?
        var furthest = 0.0
        var pending = 0.0
        var bytes = 0
    }

    init(_ kind: StreamViewer.Kind, location: String) throws(GstError) {
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        pipeline = Pipeline()
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
        // The other streams stay unlinked: the demuxer goes on while one of its pads is linked.
        _ = demuxer.onPadAdded { pad in
            if !input.isLinked { try? pad.link(input) }
        }
        let reach = Mutex(Reach())
        _ = input.addProbe(.buffer) { [continuation] info in
            guard let buffer = info.buffer, let pts = buffer.pts else { return .ok }
            let step = reach.withLock { reach -> (Double, Int)? in
                let first = reach.first ?? pts
                reach.first = first
                let end = (pts.seconds - first.seconds) + (buffer.duration?.seconds ?? 0)
                reach.pending += max(0, end - reach.furthest)
                reach.furthest = max(reach.furthest, end)
                guard reach.pending >= Self.step else { return nil }
                defer { (reach.pending, reach.bytes) = (0, 0) }
                return (reach.pending, reach.bytes)
            }
            if let (seconds, bytes) = step { continuation.yield(.media(seconds: seconds, bytes: bytes)) }
            return .ok
        }
        // Bytes as they came, the whole container's (every stream's), not the one stream timed.
        _ = demuxer.staticPad("sink")?.addProbe(.buffer) { info in
            let size = info.buffer?.size ?? 0
            reach.withLock { $0.bytes += size }
            return .ok
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

    /// Adds an event of the caller's (a watch that found the stream quiet).
    func report(_ event: Event) { continuation.yield(event) }

    /// Connects (a state change may block: not on the cooperative pool).
    func start() async -> Bool {
        let pipeline = self.pipeline
        return await onOwnThread { pipeline.setState(.playing) != .failure }
    }

    func stop() async {
        let pipeline = self.pipeline
        _ = await onOwnThread { pipeline.setState(.null) }
        // Ends the task reading the bus, which would otherwise hold it and wait on for good.
        pipeline.bus.finish()
        continuation.finish()
    }
}
