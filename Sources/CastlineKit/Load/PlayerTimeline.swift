import Foundation

/// A decoded viewer's playback as its own run showed it: the first frame when it first played,
/// a stall each time it left playing for `buffering` or `reconnecting` and until it played
/// again. Times are seconds since the viewer began, taken from the run's own events.
public struct PlayerTimeline: Sendable {
    public private(set) var firstFrame: Double?
    public private(set) var stalls = 0
    private var stalledBefore = 0.0
    private var stalledSince: Double?
    /// Wall clock minus the programme time of what plays, as the run last measured it, and when.
    private var measured: (latency: Double, at: Double)?

    public init() {}

    public var isStalled: Bool { stalledSince != nil }

    /// The run measured `latency` at `time`. While it is held (stalled) nothing it measures is
    /// new: what it held back grows with the stall instead (see `latency(at:)`).
    public mutating func measured(latency: Double, at time: Double) {
        guard stalledSince == nil else { return }
        measured = (latency, time)
    }

    /// How far behind live it plays at `time`: as last measured, and later by the time stalled
    /// since (a held run measures nothing new).
    public func latency(at time: Double) -> Double? {
        guard let measured else { return nil }
        let held = stalledSince.map { max(0, time - max($0, measured.at)) } ?? 0
        return measured.latency + held
    }

    /// The run moved to `state` at `time`.
    public mutating func entered(_ state: RunState, at time: Double) {
        switch state {
        case .playing:
            if firstFrame == nil { firstFrame = time }
            if let since = stalledSince {
                stalledBefore += max(0, time - since)
                stalledSince = nil
            }
        case .buffering, .reconnecting:
            guard firstFrame != nil, stalledSince == nil else { return }
            stalls += 1
            stalledSince = time
        default:
            break
        }
    }

    /// Seconds stalled up to `time`.
    public func stalledSeconds(at time: Double) -> Double {
        stalledBefore + (stalledSince.map { max(0, time - $0) } ?? 0)
    }

    /// Seconds played up to `time`.
    public func played(at time: Double) -> Double {
        guard let firstFrame else { return 0 }
        return max(0, time - firstFrame - stalledSeconds(at: time))
    }
}
