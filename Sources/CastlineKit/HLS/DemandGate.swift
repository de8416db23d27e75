import Synchronization

/// Demand for data (appsrc's, or the read-ahead's), for an async writer: `enough` (appsrc holds its fill) makes
/// `wait` suspend until `need` (it wants more) or `open` (the source stops).
/// Waiters are resumed, not polled: a VOD read ahead sleeps until appsrc drains.
final class DemandGate: Sendable {
    private struct State {
        var wanted = true
        var open = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())

    /// appsrc wants data.
    func need() { release { $0.wanted = true } }

    /// appsrc holds enough.
    func enough() { state.withLock { $0.wanted = false } }

    /// Whether data is wanted now (no writer would wait).
    var isWanted: Bool { state.withLock { $0.wanted || $0.open } }

    /// No more waiting, ever (the source stops).
    func open() { release { $0.open = true } }

    /// Returns once appsrc wants data (or the gate is open).
    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                guard !state.wanted, !state.open else { return true }
                state.waiters.append(continuation)
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func release(_ change: (inout State) -> Void) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}
