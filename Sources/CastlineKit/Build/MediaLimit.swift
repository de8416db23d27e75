import GstKit
import Synchronization

/// `--duration` as media: each sink input ends once it has passed that much
/// media, so a 10 s recording holds 10 s whatever was still in flight.
public final class MediaLimit: Sendable {
    private let limit = Mutex<UInt64?>(nil)

    public init() {}

    public func set(_ duration: Duration) {
        limit.withLock { $0 = ClockTime(duration).nanoseconds }
    }

    /// Ends the stream through `pad` (from its streaming thread) once the limit is reached.
    func watch(_ pad: Pad) {
        let first = Mutex<UInt64?>(nil)
        let ended = OnceFlag()
        pad.addProbe(.buffer) { [weak self] info in
            guard let self, let pts = info.buffer?.pts?.nanoseconds,
                  let limit = self.limit.withLock({ $0 }) else { return .ok }
            let start = first.withLock { value -> UInt64 in
                if value == nil { value = pts }
                return value ?? pts
            }
            guard pts >= start &+ limit else { return .ok }
            // A src pad: the event is pushed downstream (sending it would go upstream).
            if ended.trip() { info.pad?.pushEvent(.endOfStream()) }
            return .drop
        }
    }
}

extension Pad {
    /// Ends a stream nobody takes without a sink element, which would otherwise
    /// have to see end-of-stream before the pipeline can finish.
    func discardData() {
        addProbe([.buffer, .bufferList]) { _ in .drop }
    }
}
