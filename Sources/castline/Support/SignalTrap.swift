import Dispatch
import Foundation
import Synchronization

/// SIGINT and SIGTERM: the first asks for a clean stop, the second stops at once.
final class SignalTrap: Sendable {
    private let sources: [any DispatchSourceSignal]
    private let count = Mutex(0)

    init(first: @escaping @Sendable () -> Void, second: @escaping @Sendable () -> Void) {
        var sources: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            sources.append(DispatchSource.makeSignalSource(signal: number, queue: .global()))
        }
        self.sources = sources
        for source in sources {
            source.setEventHandler { [count] in
                let seen = count.withLock { value -> Int in
                    value += 1
                    return value
                }
                if seen == 1 { first() } else { second() }
            }
            source.resume()
        }
    }

    deinit {
        for source in sources { source.cancel() }
    }
}
