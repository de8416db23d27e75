import Foundation
import Synchronization

/// A lock-protected value a test and the closures it hands to other threads share.
public final class Shared<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    public init(_ value: Value) { storage = Mutex(value) }
    public var value: Value { storage.withLock { $0 } }
    public func update<R>(_ body: (inout Value) -> R) -> R { storage.withLock { body(&$0) } }
}

/// Polls `condition` until it holds or `timeout` passes; true if it held.
public func waitUntil(_ timeout: Duration = .seconds(5), _ condition: () -> Bool) -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if condition() { return true }
        Thread.sleep(forTimeInterval: 0.01)
    }
    return condition()
}

/// The same from async code: it sleeps between polls rather than holding a thread of the
/// cooperative pool (two on this machine). The condition may itself wait (a query to a server),
/// and be asked `every` so often.
public func waitUntil(_ timeout: Duration = .seconds(5), every interval: Duration = .milliseconds(10),
                      _ condition: () async -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if await condition() { return true }
        try? await Task.sleep(for: interval)
    }
    return await condition()
}
