import Foundation
import GstKit
import TestSupport
import Synchronization

/// Flips a shared flag when deallocated: proves a captured closure was released.
final class ReleaseTracker: Sendable {
    let released: Shared<Bool>
    init(_ released: Shared<Bool>) { self.released = released }
    deinit { released.update { $0 = true } }
}

/// Pops bus messages until `stop` says so or the timeout passes; returns everything seen.
@discardableResult
func drainBus(_ pipeline: Pipeline, timeout: Duration = .seconds(10),
              until stop: (BusMessage) -> Bool = isTerminal) -> [BusMessage] {
    let bus = pipeline.bus
    let deadline = ContinuousClock.now + timeout
    var seen: [BusMessage] = []
    while ContinuousClock.now < deadline {
        guard let message = bus.pop(timeout: deadline - ContinuousClock.now) else { break }
        seen.append(message)
        if stop(message) { break }
    }
    return seen
}

func isTerminal(_ message: BusMessage) -> Bool {
    switch message {
    case .endOfStream, .error: true
    default: false
    }
}

func isEOS(_ message: BusMessage) -> Bool {
    if case .endOfStream = message { return true }
    return false
}

func errorText(_ messages: [BusMessage]) -> String? {
    for case .error(let source, let message, let debug, _) in messages { return "\(source): \(message) \(debug ?? "")" }
    return nil
}


func temporaryPath(_ suffix: String) -> String {
    FileManager.default.temporaryDirectory.appendingPathComponent("gstkit-\(UUID().uuidString)\(suffix)").path
}
