import GstKit
import Synchronization

/// When an HLS source's player is stalled, observed in its pipeline: a track's buffer (the
/// multiqueue of its decodebin3) ran dry after the stream started and before the track ended,
/// and it stays stalled until a whole segment of every dry track has come (hls.js and
/// ExoPlayer play on once they hold a segment). The runner is told (`stalled`, `buffered`) and
/// holds the pipeline meanwhile, so a stall makes the viewer later, as it does a player, and
/// shows as `buffering`.
final class PlayoutStalls: Sendable {
    private struct State {
        var started = false
        var dry: Set<Int> = []
        var ended: Set<Int> = []
    }
    private let state = Mutex(State())
    private let tell: @Sendable (ConnectionChange) -> Void

    init(tell: @escaping @Sendable (ConnectionChange) -> Void) {
        self.tell = tell
    }

    /// One of `track`'s multiqueues: every queue in it empty is that track run dry.
    func watch(_ multiqueue: Element, track: Int) {
        // Emitted from the streaming thread as a pop finds every queue empty; told on from there (a channel send).
        _ = try? multiqueue.connect("underrun") { [weak self] _ in self?.ranDry(track) }
    }

    /// Media left the source: dry buffers from here on are stalls (before, the first is awaited).
    func started() {
        state.withLock { $0.started = true }
    }

    private func ranDry(_ track: Int) {
        let stalls = state.withLock { state -> Bool in
            guard state.started, !state.ended.contains(track) else { return false }
            return state.dry.insert(track).inserted && state.dry.count == 1
        }
        if stalls { tell(.stalled) }
    }

    /// A segment of `track` came whole.
    func segmentCame(track: Int) {
        let resumes = state.withLock { $0.dry.remove(track) != nil && $0.dry.isEmpty }
        if resumes { tell(.buffered) }
    }

    /// `track` has ended (its end-of-stream goes in now): what it held plays out.
    func ended(track: Int) {
        let resumes = state.withLock { $0.ended.insert(track); return $0.dry.remove(track) != nil && $0.dry.isEmpty }
        if resumes { tell(.buffered) }
    }

    /// Said again after a reconnect (the runner does not stall a run that is reconnecting).
    func retell() {
        if state.withLock({ !$0.dry.isEmpty }) { tell(.stalled) }
    }
}
