import Synchronization

/// A flag that goes up once, safe from any thread. An atomic, not a lock: pad probes trip
/// it for every buffer, and once it is up that is a load.
public final class OnceFlag: Sendable {
    private let value = Atomic(false)

    public init() {}

    /// Raises the flag; true only for the call that raised it.
    @discardableResult
    public func trip() -> Bool {
        !value.load(ordering: .acquiring)
            && value.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
    }

    public var isTripped: Bool { value.load(ordering: .acquiring) }
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
