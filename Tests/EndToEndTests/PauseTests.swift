import Foundation
import LocalIngest
import Testing

/// Pausing a live listen with a delay stage is time-shifting: the history keeps
/// filling, the delay grows by the pause, `--end-after` does not take the pause
/// for a stream that stopped, and resume plays on from where it paused.
@Suite("pause as time-shift, end to end", .serialized, .timeLimit(.minutes(3)))
struct PauseTests {
    @Test("the delay moved by 5 s reads 5.000 ± 0.02 s more latency; a pause longer than --end-after grows the delay by it, holds the position, resumes from there, and the latency grows as the delay did; a decoded load viewer beside it reads its live latency from the test signal's clock")
    func pauseLongerThanEndAfter() async throws {
        try await withPublishedTone(key: "pause", segments: 4, testSignal: true) { endpoints, key in
            // Meanwhile a decoded load viewer of the same stream: nginx's playlist has no programme times,
            // so its live latency can only come from the test signal's clock, read by its own run.
            async let loaded = Castline.run(["load", endpoints.hlsPlaylistURL(key: key), "--viewers", "1", "--decode", "1",
                                             "--duration", "8s", "--stats-json", "-"], timeout: .seconds(60))
            try await ControlAPITests.withControl([
                "listen", endpoints.hlsPlaylistURL(key: key), "--audio-only", "--output", "null",
                "--delay", "0s", "--end-after", "3s", "--measure-latency",
            ]) { api, process in
                let playing = try await api.status { ($0["state"] as? String) == "playing" && $0["position_s"] is Double }
                #expect(playing["state"] as? String == "playing", "\(playing)")
                // The delay moved by exactly 5 s (once 5 s of history is held): the latency read
                // from the media moves by that.
                let (start, moved, delayMoved) = try await api.latencyAcrossDelay(to: 5, historyTimeout: .seconds(20))
                print(String(format: "delay 0 → %.4f s: latency %.4f → %.4f s (%.4f)", delayMoved, start, moved, moved - start))
                #expect(abs(moved - start - delayMoved) <= 0.02, "latency \(start) then \(moved), the delay moved \(delayMoved) s")
                let delayBefore = try #require(try await api.get("/status").json?["delay_s"] as? Double)

                let paused = try await api.post("/pause", json: "")
                #expect(paused.json?["state"] as? String == "paused", "\(paused.text)")
                let pausedAt = Date()
                // The next sample after the pause: where play-out holds.
                let first = try await api.status { ($0["delay_s"] as? Double ?? 0) >= delayBefore + 0.5 }
                let held = try #require(first["position_s"] as? Double, "\(first)")

                // Longer than --end-after (3 s): the stream goes on, the delay grows by the pause.
                let long = try await api.status(until: { ($0["delay_s"] as? Double ?? 0) >= delayBefore + 4.5 }, timeout: .seconds(15))
                let pausedFor = Date().timeIntervalSince(pausedAt)
                #expect(process.isRunning, "\(process.standardError)")
                #expect(long["state"] as? String == "paused", "\(long)")
                let grown = try #require(long["delay_s"] as? Double, "\(long)") - delayBefore
                #expect(abs(grown - pausedFor) < 1.3, "delay grew \(grown) s over a \(pausedFor) s pause")
                #expect(abs((long["position_s"] as? Double ?? -1) - held) < 0.05, "position moved while paused: \(long), held \(held)")

                let resumed = try await api.post("/resume", json: "")
                #expect(resumed.json?["state"] as? String == "playing", "\(resumed.text)")
                let resumedAt = Date()
                let later = try await api.status(until: { ($0["position_s"] as? Double ?? 0) >= held + 2 }, timeout: .seconds(10))
                let played = Date().timeIntervalSince(resumedAt)
                let position = try #require(later["position_s"] as? Double, "\(later)")
                print(String(format: "paused %.2f s at %.3f; delay grew %.2f s; %.2f s after resume playing %.3f",
                             pausedFor, held, grown, played, position))
                // Resumed from where it paused (not at the live edge, which is the pause further on).
                #expect(position - held < played + 0.6, "resumed at \(position), paused at \(held), \(played) s ago")
                #expect(later["state"] as? String == "playing")
                #expect(!process.standardError.contains("stream ended"), "\(process.standardError)")
                // The delay on the line is true: the latency read from the media grew by as much
                // (seen to 1.2 ms; 20 ms off while the latency stage queried the pipeline's latency
                // at start instead of taking it from the latency event).
                let delayAfter = try #require(later["delay_s"] as? Double, "\(later)")
                let resumedLatency = try await api.latency(after: resumedAt.addingTimeInterval(1.5))
                print(String(format: "after the pause: delay +%.4f s, latency +%.4f s", delayAfter - delayBefore, resumedLatency - moved))
                #expect(abs((resumedLatency - moved) - (delayAfter - delayBefore)) <= 0.01,
                        "delay grew \(delayAfter - delayBefore) s, latency \(resumedLatency - moved) s")
            }
            let viewer = try await loaded
            #expect(viewer.status == 0, "\(viewer.stderr)")
            let totals = jsonLines(viewer.stdout).last { $0["event"] as? String == "load" } ?? [:]
            // Three target durations behind a live edge that is itself a segment or so behind the picture made.
            let latency = totals["latency_mean_s"] as? Double ?? 0
            #expect(totals["viewers_playing"] as? Double == 1 && latency > 2 && latency < 20, "\(totals)")
        }
    }

    @Test("paused with no time-shift (the pipeline pauses), the position stands where it paused: it is not null, and does not move")
    func positionStandsWhilePaused() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("pause.yaml", """
            version: 1
            name: pause-position
            source: { test: { video: { width: 160, height: 120 }, audio: {} } }
            stages: [ { stats: { every: 200ms } } ]
            sinks: [ { null: {} } ]
            """)
        try await ControlAPITests.withControl(["run", file, "--duration", "30s"]) { api, process in
            _ = try await api.status(until: { ($0["position_s"] as? Double ?? 0) > 1 })
            let paused = try await api.post("/pause", json: "")
            #expect(paused.json?["state"] as? String == "paused", "\(paused.text)")
            // Samples go on while paused (every 200 ms): once two readings agree (the first may be a
            // sample from just before the pause), the position they carry stands.
            var previous: Double?
            let first = try await api.status(until: { status in
                defer { previous = status["position_s"] as? Double }
                return (status["position_s"] as? Double).map { $0 == previous } ?? false
            })
            let held = try #require(first["position_s"] as? Double, "no position while paused: \(first)")
            let later = try await api.status(until: { ($0["position_s"] as? Double).map { $0 != held } ?? true }, timeout: .seconds(2))
            #expect(later["position_s"] as? Double == held, "paused at \(held), then \(later)")
            _ = await process.terminate()
        }
    }
}
