/// Exponential backoff with jitter: 1 s doubling to 30 s, each delay ±20 %.
public struct Backoff: Sendable, Equatable {
    public var initial: Duration = .seconds(1)
    public var maximum: Duration = .seconds(30)
    public var jitter = 0.2

    public init() {}

    /// The delay before retry `attempt` (1-based); `random` is in 0..<1.
    public func delay(attempt: Int, random: Double) -> Duration {
        let doublings = min(max(attempt - 1, 0), 30)
        let base = min(initial.seconds * Double(1 << doublings), maximum.seconds)
        let factor = 1 + jitter * (2 * random - 1)
        return .milliseconds(Int64((base * factor * 1000).rounded()))
    }
}

