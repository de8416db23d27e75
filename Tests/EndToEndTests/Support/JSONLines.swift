import Foundation
import Testing

/// castline's JSON lines, every one checked: a line that is not a JSON object is a defect and
/// is recorded as one. Only the last line of a file still being written (`growing`) may be cut
/// short, and is left for the next read.
func jsonLines(_ text: some StringProtocol, growing: Bool = false,
               sourceLocation: SourceLocation = #_sourceLocation) -> [[String: Any]] {
    var lines = text.split(separator: "\n")
    if growing, !text.hasSuffix("\n"), !lines.isEmpty { lines.removeLast() }
    return lines.compactMap { line in
        guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any] else {
            Issue.record("not a JSON object: \(line)", sourceLocation: sourceLocation)
            return nil
        }
        return object
    }
}
