import Dispatch
import GstKit
import Synchronization

/// Ends each stream of a source bin at its outlet once a stop is asked for, so
/// the run stops within a second: an end-of-stream sent to the pipeline would
/// queue behind what the source holds (an HLS source holds seconds ahead of
/// the clock), or never leave a demuxer that pulls from a file.
final class OutletEnds: Sendable {
    private let stopRequested = OnceFlag()
    private let outlets = Mutex<[(stream: StreamKind, pad: Pad, ended: OnceFlag)]>([])

    var isStopping: Bool { stopRequested.isTripped }

    /// Ends the stream at `pad` (an outlet queue's sink pad) on the first buffer after a stop,
    /// from the streaming thread: another thread would wait on the pad's stream lock, which
    /// the upstream thread takes back the moment it lets go. Later buffers are dropped.
    func watch(_ pad: Pad, stream: StreamKind) {
        let stopRequested = stopRequested
        let ended = OnceFlag()
        outlets.withLock { $0.append((stream, pad, ended)) }
        pad.addProbe(.buffer) { info in
            guard stopRequested.isTripped else { return .ok }
            if ended.trip() { info.pad?.sendEvent(.endOfStream()) }
            return .drop
        }
    }

    /// Asks every stream to end. One in `idle` (bringing no buffer) is ended at once:
    /// with nothing flowing, nobody holds its stream lock; any other (a stalled
    /// network) if it has not ended within a second. False when already stopping.
    @discardableResult
    func stop(idle: Set<String> = []) -> Bool {
        guard stopRequested.trip() else { return false }
        let outlets = outlets.withLock { $0 }
        for outlet in outlets where idle.contains(outlet.stream.rawValue) && outlet.ended.trip() {
            outlet.pad.sendEvent(.endOfStream())
        }
        // Off the cooperative pool: sending may wait on a stalled stream's lock.
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) {
            for outlet in outlets where outlet.ended.trip() { outlet.pad.sendEvent(.endOfStream()) }
        }
        return true
    }
}
