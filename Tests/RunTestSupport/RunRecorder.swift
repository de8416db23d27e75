import CastlineKit
import Synchronization

/// Every event of a run, kept as it comes, and waited on by what it says (not by a sleep).
/// It reads the run's one event stream: nothing else may (an AsyncStream has one reader).
public final class RunRecorder: Sendable {
    private struct Waiter {
        let matches: @Sendable (RunEvent) -> Bool
        let continuation: CheckedContinuation<RunEvent?, Never>
    }
    private struct State {
        var events: [RunEvent] = []
        var waiters: [Int: Waiter] = [:]
        var nextID = 0
        /// Waits that timed out before they were registered.
        var expired: Set<Int> = []
        var ended = false
        var endWaiters: [CheckedContinuation<[RunEvent], Never>] = []
    }
    private let state = Mutex(State())

    /// `also` sees each event as it comes, on the reading task.
    public init(_ runner: PipelineRunner, also: @escaping @Sendable (RunEvent) -> Void = { _ in }) {
        let events = runner.events
        Task { [self] in
            for await event in events {
                also(event)
                record(event)
            }
            end()
        }
    }

    /// The events so far.
    public var events: [RunEvent] { state.withLock(\.events) }

    /// Every event, once the run is over.
    public func all() async -> [RunEvent] {
        await withCheckedContinuation { continuation in
            let done: [RunEvent]? = state.withLock { state in
                if state.ended { return state.events }
                state.endWaiters.append(continuation)
                return nil
            }
            if let done { continuation.resume(returning: done) }
        }
    }

    /// The first event, seen or to come, that `matches`; nil at the timeout or the run's end.
    public func first(within timeout: Duration = .seconds(10),
                      where matches: @escaping @Sendable (RunEvent) -> Bool) async -> RunEvent? {
        let id = state.withLock { state in defer { state.nextID += 1 }; return state.nextID }
        let timer = Task { [self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            resume(id, with: nil)
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let answer: RunEvent?? = state.withLock { state in
                if let seen = state.events.first(where: matches) { return .some(seen) }
                if state.ended || state.expired.contains(id) { return .some(nil) }
                state.waiters[id] = Waiter(matches: matches, continuation: continuation)
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Whether the run reached `wanted` within `timeout`.
    public func reached(_ wanted: RunState, within timeout: Duration = .seconds(10)) async -> Bool {
        await first(within: timeout) { event in
            if case .stateChanged(_, let to) = event.kind { to == wanted } else { false }
        } != nil
    }

    private func resume(_ id: Int, with event: RunEvent?) {
        let waiter = state.withLock { state in
            defer { if event == nil { state.expired.insert(id) } }
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.continuation.resume(returning: event)
    }

    private func record(_ event: RunEvent) {
        let due: [Waiter] = state.withLock { state in
            state.events.append(event)
            let due = state.waiters.filter { $0.value.matches(event) }
            for id in due.keys { state.waiters[id] = nil }
            return Array(due.values)
        }
        for waiter in due { waiter.continuation.resume(returning: event) }
    }

    private func end() {
        let (waiters, endWaiters, events) = state.withLock { state in
            state.ended = true
            defer {
                state.waiters.removeAll()
                state.endWaiters.removeAll()
            }
            return (Array(state.waiters.values), state.endWaiters, state.events)
        }
        for waiter in waiters { waiter.continuation.resume(returning: nil) }
        for waiter in endWaiters { waiter.resume(returning: events) }
    }
}
