import Foundation
import GstKit
import Synchronization

/// Plays a file again and again as one unbroken stream.
///
/// Each pass is played by a fresh decoder, swapped in (by URISource) once every
/// stream of the pass has ended. Not a flushing seek: a flush clears the sticky
/// segment of every pad it crosses (a pad applies a flush-stop before its probes
/// see it), and a muxer must never see one.
///
/// Per stream the decoder feeds a *joint*, `identity single-segment=true`, then
/// the outlet queue. The joint gives the stream one open segment, [0, ∞): the
/// decoder's segment ends where the file does, and elements downstream clip (drop)
/// whatever lies past a segment's stop, so no segment of the file may stand for
/// every pass. At the joint's sink pad (the inlet) the later passes' end-of-streams,
/// stream-starts, segments, repeated caps and tags are dropped, and each buffer's
/// running time in the decoder's segment is taken; at the outlet that running time,
/// plus the length of the passes before, becomes the buffer's pts and dts (the
/// joint's own retiming loses dts and the data before the segment's start).
final class FileLoop: Sendable {
    private struct Stream {
        /// The segment of the decoder playing this pass (each one's is the same file's).
        var segment: SegmentInfo?
        /// Running times in `segment` of the buffer inside the joint now (taken at the inlet).
        var held: (pts: Int64?, dts: Int64?)?
        /// How far before the segment's start its first buffer lies (B-frames' dts), once it came.
        var preroll: Int64?
        /// This pass's first buffer has left the joint.
        var started = false
        /// This pass's end-of-stream has come (and was dropped).
        var ended = false
    }

    private struct State {
        var streams: [String: Stream]
        /// Passes played to the end so far.
        var pass = 0
        /// Added to the running time of every buffer of this pass: the lead, and the length of
        /// the passes before.
        var offset: Int64 = 0
        /// The lead is in `offset`: the loop's time line starts that far before the segments'
        /// start, so that no stream's first data (B-frames' dts) falls below zero and is
        /// clamped. Fixed once every stream has brought its first buffer (see `awaitLead`).
        var leadFixed = false
        /// The latest running time reached in this pass, any stream: the pass's length.
        var passEnd: Int64 = 0
        /// A pass has ended and its next decoder is not asked for yet.
        var betweenPasses = false
        /// A stop was asked for: end-of-stream goes through, and no other pass starts.
        var stopping = false
        /// A stop that waits for the starting pass: called once its streams have all started.
        var pendingStop: (@Sendable () -> Void)?
    }

    private let state: Mutex<State>
    /// Wakes the streams' first buffers waiting for the lead (each on its own streaming thread).
    private let gate = NSCondition()
    private let nextPass: @Sendable () -> Void
    /// Where passes are swapped and a stop is finished: one at a time, off the streaming
    /// threads (a decoder's state must not change from its own) and off the cooperative pool.
    private let worker = DispatchQueue(label: "castline.file-loop")

    /// `nextPass` swaps in a fresh decoder for the next pass; it is called on the loop's own queue.
    init(streams: Set<String>, nextPass: @escaping @Sendable () -> Void) {
        state = Mutex(State(streams: Dictionary(uniqueKeysWithValues: streams.map { ($0, Stream()) })))
        self.nextPass = nextPass
    }

    /// The element a stream goes through between the decoder and the outlet.
    static func makeJoint() throws -> Element {
        let joint = try ElementCatalog.make("identity")
        try joint.set("single-segment", true)
        try joint.set("silent", true)
        return joint
    }

    /// Lets every end-of-stream from now on through, and starts no other pass; then calls
    /// `ended` with the streams that nothing feeds any more (ended in this pass, their
    /// end-of-stream dropped).
    ///
    /// A decoder that is starting (the next pass) is let start first, two seconds at most:
    /// the stop's end-of-stream reaching its file source while the demuxer reads the header
    /// fails the run ("no playable streams", "Internal data stream error"), and decodebin3
    /// (1.22) set to NULL while its typefind reports deadlocks. Nothing waits meanwhile: the
    /// last stream to start calls it (or the timeout does).
    func stop(then ended: @escaping @Sendable (Set<String>) -> Void) {
        let once = OnceFlag()
        let (idle, starting, first) = state.withLock { state -> (Set<String>, Bool, Bool) in
            guard !state.stopping else { return ([], false, false) }
            state.stopping = true
            if state.betweenPasses { return (Set(state.streams.keys), false, true) }
            let idle = Set(state.streams.filter(\.value.ended).keys)
            let starting = state.streams.values.contains { !$0.started }
            if starting { state.pendingStop = { if once.trip() { ended(idle) } } }
            return (idle, starting, true)
        }
        guard first else { return }
        // First buffers held for the lead go on.
        gate.lock()
        gate.broadcast()
        gate.unlock()
        guard starting else { return ended(idle) }
        worker.asyncAfter(deadline: .now() + 2) { [self] in
            state.withLock { $0.pendingStop = nil }
            if once.trip() { ended(idle) }
        }
    }

    /// Installs the loop on a stream's joint: `inlet` is the joint's sink pad (the
    /// decoder is linked to it afresh every pass), `outlet` the pad the joint feeds.
    func watch(inlet: Pad, outlet: Pad, stream: String) {
        inlet.addProbe([.buffer, .eventDownstream, .eventUpstream]) { [self] info in
            if let event = info.event {
                let current = event.kind == .caps ? info.pad?.currentCaps : nil
                return self.handle(event, stream: stream, currentCaps: current)
            }
            return self.take(info.buffer, stream: stream)
        }
        outlet.addProbe(.buffer) { [self] info in
            self.retime(&info, stream: stream)
            return .ok
        }
    }

    private func handle(_ event: EventView, stream: String, currentCaps: Caps?) -> ProbeResult {
        let pass = state.withLock { state -> Int in
            if let segment = event.segment { state.streams[stream]?.segment = segment }
            return state.pass
        }
        switch event.kind {
        case .streamStart, .segment, .tag, .gap, .other("stream-collection"):
            // The first pass's stand for every pass: downstream sees one stream. (A gap's
            // time would be its pass's own; the buffers around it say enough.)
            return pass == 0 ? .ok : .drop
        case .caps:
            // The same file brings the same caps; anything else must go on.
            guard pass > 0, let caps = event.caps, let currentCaps, caps == currentCaps else { return .ok }
            return .drop
        case .qos:
            // Upstream: the sinks' running times are ahead of a later pass's decoder by the
            // offset, so a decoder told of them would take every frame for late and drop it.
            return pass == 0 ? .ok : .drop
        case .eos:
            switch endStream(stream) {
            case .stopping:
                return .ok
            case .passDone:
                // Swapping the decoder changes its state, which its own streaming thread must not do.
                worker.async { [self] in
                    if beginPass() { nextPass() }
                }
                return .drop
            case .waiting:
                return .drop
            }
        default:
            return .ok
        }
    }

    private enum Ending { case stopping, passDone, waiting }

    /// Marks `stream` ended in this pass (once); the pass is done when every stream has ended.
    private func endStream(_ stream: String) -> Ending {
        state.withLock { state -> Ending in
            if state.stopping { return .stopping }
            state.streams[stream]?.ended = true
            guard state.streams.values.allSatisfy(\.ended) else { return .waiting }
            for name in state.streams.keys {
                state.streams[name]?.ended = false
                state.streams[name]?.started = false
            }
            state.pass += 1
            state.offset += state.passEnd
            state.passEnd = 0
            state.betweenPasses = true
            return .passDone
        }
    }

    /// Whether the next pass may start (no stop came first).
    private func beginPass() -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.betweenPasses = false
            return true
        }
    }

    /// At the inlet: notes the buffer's running times for the outlet, and how far the pass has got.
    private func take(_ buffer: BufferView?, stream: String) -> ProbeResult {
        guard let buffer else { return .ok }
        let result = state.withLock { state -> ProbeResult in
            guard let segment = state.streams[stream]?.segment else { return .ok }
            let pts = buffer.pts.map { Self.runningTime($0, in: segment) }
            let dts = buffer.dts.map { Self.runningTime($0, in: segment) }
            if let pts, let duration = buffer.duration {
                var end = pts + Int64(clamping: duration.nanoseconds)
                if let stop = segment.stop { end = min(end, Self.runningTime(stop, in: segment)) }
                // Audio wholly before the segment's start (an AAC encoder's priming) is what a
                // decoder clips; kept, it would overlap the end of the pass before.
                if end <= 0, stream == StreamKind.audio.rawValue { return .drop }
                state.passEnd = max(state.passEnd, end)
            }
            state.streams[stream]?.held = (pts, dts)
            if !state.leadFixed, state.streams[stream]?.preroll == nil {
                state.streams[stream]?.preroll = max(0, -min(pts ?? 0, dts ?? 0))
            }
            return .ok
        }
        if result == .ok { awaitLead() }
        return result
    }

    /// Holds a stream's first buffer (on its own streaming thread) until every stream has
    /// brought one, so that the lead is known before anything leaves the loop; a second at
    /// most, then streams still to come may have early data clamped.
    private func awaitLead() {
        if state.withLock({ $0.leadFixed }) { return }
        let deadline = Date(timeIntervalSinceNow: 1)
        gate.lock()
        defer { gate.unlock() }
        while !fixLead(force: false) {
            if !gate.wait(until: deadline) {
                _ = fixLead(force: true)
                break
            }
        }
        gate.broadcast()
    }

    /// Fixes the lead once every stream has brought its first buffer (or a stop, or `force`):
    /// the most any of them lies before its segment's start. True once it is fixed.
    private func fixLead(force: Bool) -> Bool {
        state.withLock { state in
            if state.leadFixed { return true }
            let prerolls = state.streams.values.map(\.preroll)
            guard force || state.stopping || prerolls.allSatisfy({ $0 != nil }) else { return false }
            state.leadFixed = true
            state.offset += prerolls.compactMap { $0 }.max() ?? 0
            return true
        }
    }

    /// At the outlet: the buffer's running time in its pass, moved on by the passes before.
    private func retime(_ info: inout ProbeInfo, stream: String) {
        guard info.buffer != nil else { return }
        var pendingStop: (@Sendable () -> Void)?
        let taken = state.withLock { state -> (held: (pts: Int64?, dts: Int64?), offset: Int64, joins: Bool)? in
            guard let held = state.streams[stream]?.held else { return nil }
            state.streams[stream]?.held = nil
            let first = state.streams[stream]?.started == false
            state.streams[stream]?.started = true
            // The last stream of the pass is here: a stop may be waiting for that.
            if first, state.streams.values.allSatisfy(\.started) {
                pendingStop = state.pendingStop
                state.pendingStop = nil
            }
            return (held, state.offset, first && state.pass > 0)
        }
        if let pendingStop { worker.async(execute: pendingStop) }
        // Nothing taken at the inlet (no segment yet): the joint's times stand.
        guard let (held, offset, joins) = taken else { return }
        // Never below zero (only data before the lead, which a late stream can bring).
        func time(_ running: Int64?) -> ClockTime? {
            running.map { ClockTime(nanoseconds: UInt64(max(0, $0 + offset))) }
        }
        _ = info.withWritableBuffer { buffer in
            buffer.pts = time(held.pts)
            buffer.dts = time(held.dts)
            // A fresh decoder marks its first buffer discontinuous, but the stream runs on
            // (an audio encoder would drain and start over on it).
            if joins { buffer.isDiscont = false }
        }
    }

    /// Running time of `time` in a forward segment; negative before its start.
    private static func runningTime(_ time: ClockTime, in segment: SegmentInfo) -> Int64 {
        Int64(clamping: time.nanoseconds) - Int64(clamping: segment.start?.nanoseconds ?? 0)
            + Int64(clamping: segment.base?.nanoseconds ?? 0)
    }
}
