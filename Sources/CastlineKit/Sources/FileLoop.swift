import GstKit
import Synchronization

/// Plays a file again and again as one unbroken stream. At the end of the
/// media the decoder is seeked back to the start; the seek's flush, its new
/// segment and the end-of-stream are kept from going downstream, and
/// timestamps run on by the length of every pass so far.
final class FileLoop: Sendable {
    private struct State {
        var streams: Int
        var ended = 0
        /// Added to every timestamp of the current pass.
        var offset: UInt64 = 0
        /// Earliest timestamp and latest end seen in this pass.
        var passStart: UInt64?
        var passEnd: UInt64 = 0
        var seenSegment: Set<String> = []
        /// A stop was asked for: the next end-of-stream ends the run.
        var stopping = false
    }

    private let state: Mutex<State>
    private let restart: @Sendable () -> Void

    /// `restart` seeks the decoder to the start; it is called off the streaming thread.
    init(streams: Int, restart: @escaping @Sendable () -> Void) {
        state = Mutex(State(streams: streams))
        self.restart = restart
    }

    /// Lets the coming end-of-stream through.
    func stop() {
        state.withLock { $0.stopping = true }
    }

    /// Installs the loop on the pad a stream leaves the decoder through.
    func watch(_ pad: Pad, stream: String) {
        pad.addProbe([.buffer, .eventDownstream, .eventFlush]) { [self] info in
            if let event = info.event { return self.handle(event.kind, stream: stream) }
            self.retime(&info)
            return .ok
        }
    }

    private func handle(_ kind: EventKind, stream: String) -> ProbeResult {
        switch kind {
        case .flushStart, .flushStop:
            return .drop
        case .segment, .streamStart:
            // The first pass's segment stands for every pass.
            let first = state.withLock { $0.seenSegment.insert("\(kind)-\(stream)").inserted }
            return first ? .ok : .drop
        case .eos:
            if state.withLock(\.stopping) { return .ok }
            let passDone = state.withLock { state -> Bool in
                state.ended += 1
                guard state.ended >= state.streams else { return false }
                state.ended = 0
                state.offset += state.passEnd - (state.passStart ?? state.passEnd)
                state.passStart = nil
                state.passEnd = 0
                return true
            }
            if passDone {
                let restart = restart
                Task.detached { restart() }
            }
            return .drop
        default:
            return .ok
        }
    }

    private func retime(_ info: inout ProbeInfo) {
        guard let buffer = info.buffer, let pts = buffer.pts?.nanoseconds else { return }
        let offset = state.withLock { state -> UInt64 in
            state.passStart = min(state.passStart ?? pts, pts)
            state.passEnd = max(state.passEnd, pts + (buffer.duration?.nanoseconds ?? 0))
            return state.offset
        }
        info.shiftTimestamps(by: Int64(clamping: offset))
    }
}
