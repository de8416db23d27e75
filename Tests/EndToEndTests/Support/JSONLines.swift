import Foundation
import Testing
import LocalIngest

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

/// Expects each stream's last stats sample in `samples` to count as many buffers as `recording` has packets (ffprobe's count).
func expectLastSamplesCountPackets(_ samples: [[String: Any]], of recording: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) async throws {
    for stream in ["video", "audio"] {
        let last = samples.last { $0["stream"] as? String == stream }?["buffers"] as? Double ?? -1
        let probe = try await ChildProcess.run("ffprobe", ["-v", "error", "-select_streams", stream == "video" ? "v" : "a",
                                                           "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", recording])
        let packets = Double(probe.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -2
        #expect(last == packets, "\(stream): the last sample says \(last) buffers, the recording has \(packets) packets",
                sourceLocation: sourceLocation)
    }
}
