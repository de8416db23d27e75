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
