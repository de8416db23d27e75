import Dispatch
import Foundation
import Synchronization

/// SIGINT and SIGTERM: the first asks for a clean stop, the second stops at once.
// @unchecked: the sources are set once in init and only cancelled in deinit.
public final class SignalTrap: @unchecked Sendable {
    private let sources: [any DispatchSourceSignal]
    private let count = SignalCount()

    public init(first: @escaping @Sendable () -> Void, second: @escaping @Sendable () -> Void) {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            sources.append(DispatchSource.makeSignalSource(signal: number, queue: .global()))
        }
        self.sources = sources
        for source in sources {
            source.setEventHandler { [count] in
                let seen = count.increment()
                if seen == 1 { first() } else { second() }
            }
            source.resume()
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}

/// How many stop signals have arrived.
private final class SignalCount: Sendable {
    private let value = Mutex(0)

    func increment() -> Int {
        value.withLock { count in
            count += 1
            return count
        }
    }
}
