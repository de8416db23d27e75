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
    /// Every tell goes out on one serial queue, in the order offered.
    func offer(runningTime: ClockTime?, _ tell: @escaping @Sendable () -> Void) {
        let element = state.withLock { $0.element }
        var ahead = Duration.zero
        if let running = runningTime, let now = element?.runningTime, running > now {
            let gap = Duration.nanoseconds(Int64(clamping: running.nanoseconds - now.nanoseconds))
            if gap <= Self.furthestAhead { ahead = gap }
        }
        let now = ContinuousClock.now
        let first: Bool = state.withLock { state in
            // Never before what was found earlier.
            state.due.append((max(now + ahead, state.due.last?.at ?? now), tell))
            return state.due.count == 1
        }
        // Otherwise a drain is due already for what waits first, and goes on to this.
        if first { schedule(after: ahead) }
    }

    /// Tells everything still waiting, now, in order (the stream ended: nothing more plays to wait for).
    func flush() {
        queue.async { self.drain(all: true) }
    }

    // Strong: what was found is told even if the stage is released meanwhile (10 s at most).
    private func schedule(after delay: Duration) {
        queue.asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: delay.totalNanoseconds))) { self.drain() }
    }

    /// Tells what plays by now (`all`: everything), then waits for the next.
    private func drain(all: Bool = false) {
        let (ready, next): ([@Sendable () -> Void], Duration?) = state.withLock { state in
            let now = ContinuousClock.now
            let count = all ? state.due.count : state.due.prefix { $0.at <= now }.count
            let ready = state.due.prefix(count).map(\.tell)
            state.due.removeFirst(count)
            // One chain of drains at a time: `offer` starts one only when nothing waited.
            return (ready, state.due.first.map { max(.zero, $0.at - now) })
        }
        for tell in ready { tell() }
        if let next { schedule(after: next) }
    }
}
