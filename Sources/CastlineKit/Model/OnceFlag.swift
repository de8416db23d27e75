import Synchronization

/// A flag that goes up once, safe from any thread.
public final class OnceFlag: Sendable {
    private let value = Mutex(false)

    public init() {}

    /// Raises the flag; true only for the call that raised it.
    @discardableResult
    public func trip() -> Bool {
        value.withLock { raised in
            defer { raised = true }
            return !raised
        }
    }

    public var isTripped: Bool { value.withLock { $0 } }
}

/// One flag per key, each going up once: "say it once" for each of several things.
public final class OnceFlags<Key: Hashable & Sendable>: Sendable {
    private let raised = Mutex(Set<Key>())

    public init() {}

    /// Raises `key`'s flag; true only for the call that raised it.
    public func trip(_ key: Key) -> Bool {
        raised.withLock { $0.insert(key).inserted }
    }
}
