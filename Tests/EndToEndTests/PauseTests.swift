import Foundation
import LocalIngest
import Testing

/// Pausing a live listen with a delay stage is time-shifting: the history keeps
/// filling, the delay grows by the pause, `--end-after` does not take the pause
/// for a stream that stopped, and resume plays on from where it paused.
@Suite("pause as time-shift, end to end", .serialized, .timeLimit(.minutes(3)))
struct PauseTests {
    @Test("a pause longer than --end-after: the delay grows by it, the position holds, resume plays on from there")
    func pauseLongerThanEndAfter() async throws {
        try await withPublishedTone(key: "pause", segments: 4) { endpoints, key in
            try await ControlAPITests.withControl([
                "listen", endpoints.hlsPlaylistURL(key: key), "--audio-only", "--output", "null",
                "--delay", "0s", "--end-after", "3s",
            ]) { api, process in
                let playing = try await api.status { ($0["state"] as? String) == "playing" && $0["position_s"] is Double }
                #expect(playing["state"] as? String == "playing", "\(playing)")

                let paused = try await api.post("/pause", json: "")
                #expect(paused.json?["state"] as? String == "paused", "\(paused.text)")
                let pausedAt = Date()
                // The next sample after the pause: where play-out holds.
                let first = try await api.status { ($0["delay_s"] as? Double ?? 0) >= 0.5 }
                let held = try #require(first["position_s"] as? Double, "\(first)")

                // Longer than --end-after (3 s): the stream goes on, the delay grows by the pause.
                let long = try await api.status(until: { ($0["delay_s"] as? Double ?? 0) >= 4.5 }, timeout: .seconds(15))
                let pausedFor = Date().timeIntervalSince(pausedAt)
                #expect(process.isRunning, "\(process.standardError)")
                #expect(long["state"] as? String == "paused", "\(long)")
                let grown = try #require(long["delay_s"] as? Double, "\(long)")
                #expect(abs(grown - pausedFor) < 1.3, "delay \(grown) s after a \(pausedFor) s pause")
                #expect(abs((long["position_s"] as? Double ?? -1) - held) < 0.05, "position moved while paused: \(long), held \(held)")

                let resumed = try await api.post("/resume", json: "")
                #expect(resumed.json?["state"] as? String == "playing", "\(resumed.text)")
                let resumedAt = Date()
                let later = try await api.status(until: { ($0["position_s"] as? Double ?? 0) >= held + 2 }, timeout: .seconds(10))
                let played = Date().timeIntervalSince(resumedAt)
                let position = try #require(later["position_s"] as? Double, "\(later)")
                print(String(format: "paused %.2f s at %.3f; delay grew to %.2f s; %.2f s after resume playing %.3f",
                             pausedFor, held, grown, played, position))
                // Resumed from where it paused (not at the live edge, which is the pause further on).
                #expect(position - held < played + 0.6, "resumed at \(position), paused at \(held), \(played) s ago")
                #expect((later["delay_s"] as? Double ?? 0) >= grown - 0.1, "\(later)")
                #expect(later["state"] as? String == "playing")
                #expect(!process.standardError.contains("stream ended"), "\(process.standardError)")
            }
        }
    }
}
