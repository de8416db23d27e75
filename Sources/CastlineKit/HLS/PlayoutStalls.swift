import GstKit
import Synchronization

/// When an HLS source's player is stalled, observed in its pipeline: a track's buffer (the
/// multiqueue of its decodebin3) ran dry after the stream started and before the track ended,
/// and it stays stalled until a whole segment of every dry track has come, one whose bytes began
/// to come after it ran dry (hls.js and ExoPlayer play on once they hold a segment; the rest of
/// one that ran dry half way is not one). The runner is told (`stalled`, `buffered`) and holds
/// the pipeline meanwhile, so a stall makes the viewer later, as it does a player, and shows as
/// `buffering`.
final class PlayoutStalls: Sendable {
    private struct State {
        var started = false
        var dry: Set<Int> = []
        /// Dry tracks a segment has begun to come to since they ran dry.
        var refilling: Set<Int> = []
        /// Tracks whose next bytes are a segment's first.
        var opening: Set<Int> = []
        var ended: Set<Int> = []
    }
    private let state = Mutex(State())
    private let tell: @Sendable (ConnectionChange) -> Void
    private let onStall: @Sendable () -> Void

    /// `onStall`: a stall began (what holds the reading back must let it go on).
    init(tell: @escaping @Sendable (ConnectionChange) -> Void, onStall: @escaping @Sendable () -> Void) {
        self.tell = tell
        self.onStall = onStall
    }

    /// One of `track`'s multiqueues: every queue in it empty is that track run dry.
    func watch(_ multiqueue: Element, track: Int) {
        // Emitted from the streaming thread as a pop finds every queue empty.
        _ = try? multiqueue.connect("underrun") { [weak self] _ in self?.ranDry(track) }
    }

    /// Media left the source: dry buffers from here on are stalls (before, the first is awaited).
    func started() {
        state.withLock { $0.started = true }
    }

    // What is told is decided and told under the lock (a channel send, which never blocks), so
    // the runner hears `stalled` and `buffered` in the order they happened.

    private func ranDry(_ track: Int) {
        let stalls = state.withLock { state -> Bool in
            guard state.started, !state.ended.contains(track) else { return false }
            state.refilling.remove(track)
            guard state.dry.insert(track).inserted, state.dry.count == 1 else { return false }
            tell(.stalled)
            return true
        }
        if stalls { onStall() }
    }

    /// A segment of `track` begins.
    func segmentStarts(track: Int) {
        state.withLock { _ = $0.opening.insert(track) }
    }

    /// Bytes of `track` came.
    func bytesCame(track: Int) {
        state.withLock { state in
            guard state.opening.remove(track) != nil, state.dry.contains(track) else { return }
            state.refilling.insert(track)
        }
    }

    /// A segment of `track` came whole.
    func segmentCame(track: Int) {
        state.withLock { state in
            guard state.refilling.remove(track) != nil else { return }
            state.dry.remove(track)
            if state.dry.isEmpty { tell(.buffered) }
        }
    }

    /// `track` has ended (its end-of-stream goes in now): what it held plays out.
    func ended(track: Int) {
        state.withLock { state in
            state.ended.insert(track)
            state.refilling.remove(track)
            if state.dry.remove(track) != nil, state.dry.isEmpty { tell(.buffered) }
        }
    }

    /// Said again after a reconnect (the runner does not stall a run that is reconnecting).
    func retell() {
        state.withLock { state in
            if !state.dry.isEmpty { tell(.stalled) }
        }
    }
}
