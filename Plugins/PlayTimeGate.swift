import CastlineKit
import Dispatch
import Synchronization
import Timing

/// Says what a stage found in the media (an alarm, a silence) when that media plays, not when
/// the stage reads it: a stage reads ahead of play-out by whatever is queued after it (seconds,
/// in a listener), and a fault must not be told, nor said to have begun, before it can be seen
/// or heard. Media far ahead of the clock (a pipeline it does not pace, file to file) is told at once.
final class PlayTimeGate: Sendable {
    static let furthestAhead: Duration = .seconds(10)

    private struct State {
        /// Where the pipeline's running time is read.
        var element: Element?
        /// What to tell, in the order found, each with when it plays.
        var due: [(at: ContinuousClock.Instant, tell: @Sendable () -> Void)] = []
    }
    private let state = Mutex(State())
    private let queue = DispatchQueue(label: "castline.play-time-gate")

    func timed(by element: Element) { state.withLock { $0.element = element } }

    /// `tell` what was found in a buffer that plays at `runningTime`. From a streaming thread.
    func offer(runningTime: ClockTime?, _ tell: @escaping @Sendable () -> Void) {
        let element = state.withLock { $0.element }
        var ahead = Duration.zero
        if let running = runningTime, let now = element?.runningTime, running > now {
            let gap = Duration.nanoseconds(Int64(clamping: running.nanoseconds - now.nanoseconds))
            if gap <= Self.furthestAhead { ahead = gap }
        }
        let now = ContinuousClock.now
        let sayNow: Bool = state.withLock { state in
            // Nothing waits and it plays now: said on this thread, in order.
            if ahead == .zero, state.due.isEmpty { return true }
            // Never before what was found earlier.
            let at = max(now + ahead, state.due.last?.at ?? now)
            state.due.append((at, tell))
            return false
        }
        if sayNow {
            tell()
        } else {
            schedule(after: ahead)
        }
    }

    private func schedule(after delay: Duration) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay.totalNanoseconds))) { [weak self] in self?.drain() }
    }

    /// Says what plays by now, then waits for the next.
    private func drain() {
        let (ready, next): ([@Sendable () -> Void], Duration?) = state.withLock { state in
            let now = ContinuousClock.now
            let count = state.due.prefix { $0.at <= now }.count
            let ready = state.due.prefix(count).map(\.tell)
            state.due.removeFirst(count)
            return (ready, state.due.first.map { $0.at - now })
        }
        for tell in ready { tell() }
        if let next { schedule(after: next) }
    }
}
