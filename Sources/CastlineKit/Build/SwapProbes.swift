import GstKit
import Synchronization

/// Sits where a stream enters a sink. During a swap it keeps the old parts'
/// end-of-stream out of the sink (telling the swap they have drained), and it
/// keeps every stream-start after the first out, so the sink sees one stream
/// from start to end whatever is swapped upstream.
final class EntryGuard: Sendable {
    private struct State {
        var started = false
        var drained: (@Sendable () -> Void)?
        var mediaArrived: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    func install(on pad: Pad) {
        pad.addProbe([.buffer, .bufferList, .eventDownstream]) { [self] info in
            guard let event = info.event else {
                state.withLock { state in
                    let arrived = state.mediaArrived
                    state.mediaArrived = nil
                    return arrived
                }?()
                return .ok
            }
            switch event.kind {
            case .streamStart:
                return state.withLock { state in
                    defer { state.started = true }
                    return state.started ? .drop : .ok
                }
            case .eos:
                guard let drained = state.withLock({ state in
                    defer { state.drained = nil }
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

/// Continues the timeline across a source swap: notes where the old source's
/// streams ended (in running time), then shifts the new source's buffers so the
/// first of them starts there. One offset serves every stream, so audio and video
/// stay in step; the sinks see no jump and no gap.
final class TimelineJoin: Sendable {
    private struct State {
        var end: UInt64 = 0
        var offset: Int64?
    }

    private let state = Mutex(State())

    /// Follows the source's stream through `pad`, from the start (a swap needs its end).
    func follow(_ pad: Pad) {
        let segment = Mutex(pad.stickySegment)
        pad.addProbe([.buffer, .eventDownstream]) { [self] info in
            if let event = info.event {
                if let new = event.segment { segment.withLock { $0 = new } }
                return .ok
            }
            guard let buffer = info.buffer, let pts = buffer.pts,
                  let start = segment.withLock({ $0 })?.runningTime(of: pts) else { return .ok }
            let end = start.nanoseconds &+ (buffer.duration?.nanoseconds ?? 0)
            state.withLock { $0.end = max($0.end, end) }
            return .ok
        }
    }

    /// Where the old streams ended, in running time (0 when nothing was seen).
    var end: UInt64 { state.withLock(\.end) }

    /// Moves the new source's stream through `pad` on to continue from `end`: at its first
    /// buffer the pad gets an offset (gst_pad_set_offset), which moves the running time of
    /// everything after, the segment re-sent with it; the buffers keep their own timestamps.
    func join(_ pad: Pad) {
        pad.addProbe(.buffer) { [self] info in
            guard let pts = info.buffer?.pts, let pad = info.pad else { return .ok }
            let offset = state.withLock { state -> Int64 in
                if let offset = state.offset { return offset }
                let start = pad.stickySegment?.runningTime(of: pts)?.nanoseconds ?? pts.nanoseconds
                let offset = Int64(clamping: state.end) - Int64(clamping: start)
                state.offset = offset
                return offset
            }
            pad.offset = offset
            return .remove
        }
    }
}
