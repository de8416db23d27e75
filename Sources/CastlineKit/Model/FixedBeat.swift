/// Calls `tick` every `interval` on a fixed beat (first + n × interval), not `interval` after
/// each call: a late wake-up on a loaded machine does not push every later one back, and one
/// more than a beat late is followed by the next beat from then, not a burst of catch-ups.
/// Ends when `tick` returns false (a stage's reporting, once its pipeline is gone).
public enum FixedBeat {
    public static func start(every interval: Duration, _ tick: @escaping @Sendable () -> Bool) {
        Task {
            var next = ContinuousClock.now + interval
            while true {
                try? await Task.sleep(until: next)
                guard tick() else { return }
                next += interval
                if next < .now { next = .now + interval }
            }
        }
    }
}
