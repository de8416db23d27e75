import GstKit
import Synchronization

/// Sits where a stream enters a sink. During a swap it keeps the old parts'
/// end-of-stream out of the sink (telling the swap they have drained), and it
/// keeps every stream-start after the first out, so the sink sees one stream
/// from start to end whatever is swapped upstream; and audio does not go back in time at the join.
final class EntryGuard: Sendable {
    private struct State {
        var started = false
        var drained: (@Sendable () -> Void)?
        var mediaArrived: (@Sendable () -> Void)?
        var segment: SegmentInfo?
        /// The running time the last buffer was decoded at (its dts, else its pts).
        var lastDecoded: UInt64?
        /// The old parts have drained into this entry: until a new buffer follows the last old
        /// one, those that would go back before it are dropped (a new encoder's first frames
        /// come early by its priming, which a muxer would write as time going back).
        var joining = false

        /// Whether `buffer` goes on from the last one, noting it when it does.
        mutating func goesOn(_ buffer: BufferView) -> Bool {
            guard let time = buffer.dts ?? buffer.pts, let decoded = segment?.runningTime(of: time)?.nanoseconds else { return true }
            if joining, let lastDecoded, decoded + EntryGuard.joinTolerance < lastDecoded { return false }
            joining = false
            lastDecoded = decoded
            return true
        }
    }

    /// How far back a buffer after a join may start and still be kept: rounding, not an overlap.
    static let joinTolerance: UInt64 = 2_000_000

    private let state = Mutex(State())
    /// Audio is kept from going back at a join; video is not (a new encoder's B-frames start its
    /// decode times early, and dropping them would drop the keyframe they open with).
    private let guardsJoin: Bool

    init(stream: StreamKind) {
        guardsJoin = stream == .audio
    }

    func install(on pad: Pad) {
        pad.addProbe([.buffer, .bufferList, .eventDownstream]) { [self] info in
            guard let event = info.event else {
                let (arrived, keep): ((@Sendable () -> Void)?, Bool) = state.withLock { state in
                    let arrived = state.mediaArrived
                    state.mediaArrived = nil
                    return (arrived, !guardsJoin || info.buffer.map { state.goesOn($0) } ?? true)
                }
                arrived?()
                return keep ? .ok : .drop
            }
            if let segment = event.segment { state.withLock { $0.segment = segment } }
            switch event.kind {
            case .streamStart:
                return state.withLock { state in
                    defer { state.started = true }
                    return state.started ? .drop : .ok
                }
            case .eos:
                guard let drained = state.withLock({ state in
                    defer { state.drained = nil }
                    if state.drained != nil { state.joining = true }
                    return state.drained
                }) else { return .ok }
                drained()
                return .drop
            default:
                return .ok
            }
        }
    }

    /// The next end-of-stream is the old parts draining: it is dropped, and `done` called.
    func expectDrain(_ done: @escaping @Sendable () -> Void) {
        state.withLock { $0.drained = done }
    }

    /// Stops waiting for a drain that did not come.
    func cancelDrain() {
        state.withLock { $0.drained = nil }
    }

    /// `arrived` is called at the next buffer (the first from the new parts).
    func expectMedia(_ arrived: @escaping @Sendable () -> Void) {
        state.withLock { $0.mediaArrived = arrived }
    }
}

/// Continues the timeline across a source swap: notes where each of the old source's
/// streams ended (in running time), then shifts each of the new source's streams so its
/// first buffer starts where the same stream of the old one ended: the first new sample
/// follows the last old one, the first new frame takes the next frame's slot. Audio and
/// video stay in step within the frame they already were apart; the sinks see no jump, no gap.
final class TimelineJoin: Sendable {
    private let ends = Mutex<[StreamKind: UInt64]>([:])

    /// Follows the source's `stream` through `pad`, from the start (a swap needs its end).
    func follow(_ pad: Pad, stream: StreamKind) {
        let segment = Mutex(pad.stickySegment)
        pad.addProbe([.buffer, .eventDownstream]) { [self] info in
            if let event = info.event {
                if let new = event.segment { segment.withLock { $0 = new } }
                return .ok
            }
            guard let buffer = info.buffer, let pts = buffer.pts,
                  let start = segment.withLock({ $0 })?.runningTime(of: pts) else { return .ok }
            let end = start.nanoseconds &+ (buffer.duration?.nanoseconds ?? 0)
            ends.withLock { $0[stream] = max($0[stream] ?? 0, end) }
            return .ok
        }
    }

    /// Where the old `stream` ended, in running time: a stream the old source did not have
    /// starts where the furthest one ended (0 when nothing was seen).
    func end(of stream: StreamKind) -> UInt64 {
        ends.withLock { $0[stream] ?? $0.values.max() ?? 0 }
    }

    /// Moves the new source's `stream` through `pad` on to continue from where the old one's
    /// ended: at its first buffer the pad gets an offset (gst_pad_set_offset), which moves the
    /// running time of everything after, the segment re-sent with it; buffers keep their timestamps.
    func join(_ pad: Pad, stream: StreamKind) {
        let end = end(of: stream)
        pad.addProbe(.buffer) { info in
            guard let pts = info.buffer?.pts, let pad = info.pad else { return .ok }
            let start = pad.stickySegment?.runningTime(of: pts)?.nanoseconds ?? pts.nanoseconds
            pad.offset = Int64(clamping: end) - Int64(clamping: start)
            return .remove
        }
    }
}
