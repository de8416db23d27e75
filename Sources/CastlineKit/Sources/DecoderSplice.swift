import GstKit
import Synchronization

/// Joins a replacement decoder's streams onto the old ones as one stream: the
/// replacement's stream-start and segment are kept from going downstream (the
/// first ones stand), and its timestamps are moved so that its first buffer
/// plays now, on the running clock, after the outage. One offset serves every
/// stream, so audio and video stay in step.
///
/// A later segment is sent on as the standing one: the start-back's seek
/// (`HLSStartBack`) flushes the outlet, which takes the segment off every pad it
/// passes, and the segment hlsdemux2 sends after it is a later one. Dropped with
/// nothing in its place, the media would flow on without a segment (GStreamer
/// warns for every buffer, on every pad, when it does).
final class DecoderSplice: Sendable {
    private struct State {
        var offset: Int64 = 0
        /// Set by `begin`: the pipeline's running time now, read at the replacement's first buffer.
        var runningTime: (@Sendable () -> ClockTime?)?
        /// Streams whose first stream-start and segment have gone by.
        var seen: Set<String> = []
        /// The segment that stands, per stream.
        var segments: [String: SegmentInfo] = [:]
    }

    /// Headroom for the first buffer to reach the sinks before its time comes.
    static let headroom: Int64 = 200_000_000
    private let state = Mutex(State())

    /// A replacement decoder is about to push; its first buffer is timed to play
    /// `headroom` after `runningTime()` says.
    func begin(runningTime: @escaping @Sendable () -> ClockTime?) {
        state.withLock { $0.runningTime = runningTime }
    }

    /// Installs the splice on the pad a stream leaves the decoder through.
    func watch(_ pad: Pad, stream: String) {
        pad.addProbe([.buffer, .eventDownstream]) { [self] info in
            if let event = info.event {
                guard event.kind == .segment || event.kind == .streamStart else { return .ok }
                let (passes, standing) = state.withLock { state -> (Bool, SegmentInfo?) in
                    if state.seen.insert("\(event.kind)-\(stream)").inserted {
                        if let segment = event.segment { state.segments[stream] = segment }
                        return (true, nil)
                    }
                    // The standing segment itself passes: it is what goes back in below.
                    let standing = state.segments[stream]
                    return (event.segment != nil && event.segment == standing, standing)
                }
                guard !passes else { return .ok }
                if event.kind == .segment, let standing {
                    // Into the pad on its own streaming thread: it goes in before what follows.
                    _ = info.pad?.sendEvent(.segment(standing))
                }
                return .drop
            }
            retime(&info, stream: stream)
            return .ok
        }
    }

    private func retime(_ info: inout ProbeInfo, stream: String) {
        guard let buffer = info.buffer, let pts = buffer.pts.map({ Int64($0.nanoseconds) }) else { return }
        let offset = state.withLock { state -> Int64 in
            if let runningTime = state.runningTime, let now = runningTime() {
                state.runningTime = nil
                // The standing segment maps position p to running time p - start + base.
                let segment = state.segments[stream]
                let start = Int64(segment?.start?.nanoseconds ?? 0), base = Int64(segment?.base?.nanoseconds ?? 0)
                state.offset = Int64(now.nanoseconds) + Self.headroom - base + start - pts
            }
            return state.offset
        }
        info.shiftTimestamps(by: offset)
    }
}
