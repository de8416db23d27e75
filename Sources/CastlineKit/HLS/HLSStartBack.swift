import GstKit
import Synchronization

/// Starts a live HLS stream further back in its playlist when a stage
/// downstream wants history before it plays (the delay stage's initial delay,
/// see `HistoryHandshake`), so that history is there at once instead of
/// growing in real time.
///
/// hlsdemux2 has no start position of its own: it starts three target
/// durations from the live edge. So on the first buffer this seeks it back by
/// the wanted amount within the live window (a flushing seek on the decoder;
/// hlsdemux2 lands on the segment holding the target, or the oldest one).
/// Until the media from there arrives, each outlet drops what comes (the media
/// from the usual start) and the seek's flush, so nothing downstream sees either.
///
/// The segment the first media came with stands after that seek (`DecoderSplice`
/// puts it back in place of the one hlsdemux2 sends): the older media would come
/// earlier than its start and be clipped. So it is re-stamped here, every buffer
/// from then on moved later by how far back the media starts (as if the stream had
/// begun there). Each outlet then tells the stage, before its first buffer, how far
/// back the media starts and how much its timestamps were moved.
///
/// With no stage asking, every buffer passes untouched.
final class HLSStartBack: Sendable {
    /// A seek that brings nothing for this long is given up (the media from the usual start flows again).
    static let seekTimeout: Duration = .seconds(5)

    private enum Phase { case undecided, seeking(since: ContinuousClock.Instant), passing }

    private struct State {
        var phase = Phase.undecided
        /// The most history any stage asked for, in ns; nil when none asked.
        var wanted: UInt64?
        /// The first decoder, until the start is decided (then not kept alive here).
        var decoder: Element?
        var decoderSeen = false
        /// A VOD starts at its beginning: nothing to go back to. Unknown (a master playlist) counts as live.
        var isLive = true
        /// The source will time the live edge (see `LiveEdgeWatch`): the offer says so.
        var liveEdgeExpected = false
        /// The stream's PTS of the first buffer from the usual start.
        var usualStartPTS: UInt64?
        /// How far back the media starts, once known (0 without a seek): its timestamps move as far.
        var startBack: UInt64?
    }

    /// One outlet's view: its segment, and the seek's progress through it.
    private final class Outlet: Sendable {
        struct Seen {
            var segment: SegmentInfo?
            var flushed = false
            var offered = false
        }
        let seen = Mutex(Seen())
    }

    private enum BufferAction {
        case drop, pass
        case seek(Element, ClockTime)
        /// Tell the stage (once per outlet), move the timestamps later by `startBack`, pass.
        case offer(startBack: UInt64)
    }

    private let state = Mutex(State())

    /// What the source's own fetch of the playlist said.
    func playlist(isLive: Bool) {
        state.withLock { $0.isLive = isLive }
    }

    /// The source will send `HistoryHandshake.liveEdge` events.
    func expectLiveEdge() {
        state.withLock { $0.liveEdgeExpected = true }
    }

    /// A stage will want this much history (ns) at the start; its own request may come later.
    func wanted(_ initial: UInt64) {
        state.withLock { $0.wanted = max($0.wanted ?? 0, initial) }
    }

    /// The decoder to seek: only the first one (a reconnect's fresh decoder starts at the edge).
    func decoderMade(_ decoder: Element) {
        state.withLock { state in
            guard !state.decoderSeen else { return }
            state.decoderSeen = true
            state.decoder = decoder
        }
    }

    /// Watches the pad a stream leaves the source bin through (downstream of its outlet queue).
    func watch(_ pad: Pad) {
        let outlet = Outlet()
        pad.addProbe([.buffer, .eventDownstream, .eventFlush, .eventUpstream]) { [self] info in
            if let event = info.event { return handle(event, outlet: outlet) }
            guard let pts = info.buffer?.pts?.nanoseconds else { return .ok }
            switch bufferAction(pts: pts, outlet: outlet) {
            case .drop:
                return .drop
            case .pass:
                return .ok
            case .seek(let decoder, let target):
                Task.detached { [self] in
                    // Off the streaming thread: a flushing seek waits for it.
                    if !decoder.sendEvent(.seek(to: target)) { giveUp() }
                }
                return .drop
            case .offer(let startBack):
                let first = outlet.seen.withLock { seen in defer { seen.offered = true }; return !seen.offered }
                let liveEdge = state.withLock(\.liveEdgeExpected)
                if first, let offer = HistoryHandshake.offered(startBack: startBack, restamped: startBack, liveEdge: liveEdge) {
                    info.pad?.pushEvent(offer)
                }
                info.shiftTimestamps(by: Int64(clamping: startBack))
                return .ok
            }
        }
    }

    private func handle(_ event: EventView, outlet: Outlet) -> ProbeResult {
        if let initial = HistoryHandshake.wantedInitial(event) {
            wanted(initial)
            return .drop
        }
        let seeking = state.withLock { if case .seeking = $0.phase { true } else { false } }
        switch event.kind {
        case .segment:
            // While seeking it is the standing segment, put back after our flush: downstream
            // never lost it (the flush stays here too).
            guard !seeking else { return .drop }
            outlet.seen.withLock { $0.segment = event.segment }
            return .ok
        case .flushStart, .flushStop:
            // Our seek's flush stays here: downstream keeps its time line.
            guard seeking else { return .ok }
            if event.kind == .flushStop { outlet.seen.withLock { $0.flushed = true } }
            return .drop
        default:
            return .ok
        }
    }

    private func bufferAction(pts: UInt64, outlet: Outlet) -> BufferAction {
        let seen = outlet.seen.withLock { $0 }
        return state.withLock { state -> BufferAction in
            switch state.phase {
            case .undecided:
                return decide(&state, pts: pts, segment: seen.segment)
            case .seeking(let since):
                if seen.flushed {
                    // The first media from the new start: how far back it is, on the stream's own timestamps.
                    let usual = state.usualStartPTS ?? pts
                    let startBack = usual > pts ? usual - pts : 0
                    state.startBack = startBack
                    state.phase = .passing
                } else if ContinuousClock.now - since > Self.seekTimeout {
                    state.startBack = 0
                    state.phase = .passing
                } else {
                    return .drop
                }
            case .passing:
                guard state.wanted != nil else { return .pass }
            }
            return .offer(startBack: state.startBack ?? 0)
        }
    }

    /// The first buffer of the stream: seek back if a stage wants history and the playlist has some.
    private func decide(_ state: inout State, pts: UInt64, segment: SegmentInfo?) -> BufferAction {
        let decoder = state.decoder
        state.decoder = nil
        guard let wanted = state.wanted else {
            state.phase = .passing
            return .pass
        }
        // Where this buffer sits in the playlist (stream time): how far back there is to go.
        let streamTime = segment.flatMap { segment -> UInt64? in
            guard segment.isTimeFormat, let start = segment.start?.nanoseconds, pts >= start else { return nil }
            return (segment.time?.nanoseconds ?? 0) + (pts - start)
        }
        state.phase = .passing
        state.startBack = 0
        guard wanted > 0, state.isLive, let decoder, let streamTime, streamTime >= 1_000_000_000 else {
            return .offer(startBack: 0)
        }
        state.phase = .seeking(since: .now)
        state.usualStartPTS = pts
        state.startBack = nil
        return .seek(decoder, ClockTime(nanoseconds: streamTime - min(wanted, streamTime)))
    }

    /// The seek was refused: the media from the usual start flows again.
    private func giveUp() {
        state.withLock { state in
            state.phase = .passing
            state.startBack = 0
        }
    }
}
