import Foundation
import LocalIngest
import Testing

/// `listen --delay` on a live stream from the local ingest (nginx-rtmp, 2 s
/// segments), judged by what the delay stage reports it plays out
/// (`position_s`: the media's own timestamps, comparable between two processes
/// reading one stream) at the same wall-clock moments.
@Suite("castline listen --delay, end to end", .serialized, .timeLimit(.minutes(3)))
struct DelayListenTests {
    // Three listeners on one published stream (one publish and one start-up, not two).
    @Test("""
    Three listeners on one stream: one without --delay, one at --delay 0, one at --delay 5s started 1 s later. \
    Against the delay 0 one, the 5 s one's latency, read from the test signal, is 5.000 s ± 0.02 s more, as its media is \
    (start-up does not count); against the one without --delay, where each says what it hears lies in the stream (the \
    stats stage's position_s) differs by what their latencies do (within 50 ms)
    """)
    func threeListeners() async throws {
        // Four segments listed: a player starts three target durations (6 s) back, one
        // segment more is there, so the other 3 s are buffered in real time before playing.
        try await withPublishedTone(key: "delay", segments: 4, testSignal: true) { endpoints, key in
            let scratch = try Scratch()
            let url = endpoints.hlsPlaylistURL(key: key)
            let plain = try DelayListener.start(url: url, delay: nil, scratch: scratch, measuringLatency: true)
            let live = try DelayListener.start(url: url, delay: "0s", scratch: scratch, measuringLatency: true)
            try await Task.sleep(for: .seconds(1))
            let delayed = try DelayListener.start(url: url, delay: "5s", scratch: scratch, measuringLatency: true)
            var (gaps, heardGaps): ([Double], [Double]) = ([], [])
            let deadline = ContinuousClock.now + .seconds(30)
            while ContinuousClock.now < deadline, gaps.count < 4 || heardGaps.count < 4
                    || [plain, live, delayed].contains(where: { $0.latencies.count < 4 }) {
                try await Task.sleep(for: .seconds(1))
                gaps = positionGaps(ahead: live.positions, behind: delayed.positions)
                heardGaps = positionGaps(ahead: plain.heardPositions, behind: delayed.heardPositions)
            }
            for listener in [plain, live, delayed] { await listener.stop() }

            // The latency stage against the truth of the media's own timestamps (position_s).
            let latencies = [plain, live, delayed].map { Array($0.latencies.suffix(4)) }
            #expect(latencies.allSatisfy { $0.count >= 3 }, "latencies read: \(latencies)")
            let median = latencies.map { LatencyStageMedian.of($0) ?? 0 }
            let apart = median[2] - median[1]
            let gap = LatencyStageMedian.of(gaps) ?? 0
            print(String(format: "delay 0 s vs 5 s: latencies %.4f s apart, media %.4f s apart", apart, gap))
            // Both anchor on the live edge each timed to a few ms (seen 4.9961 to 5.0017 s).
            #expect(abs(apart - 5) <= 0.02, "latencies \(apart) s apart")
            // What is heard against what the delay stage says it plays (seen within 2 ms).
            #expect(abs(apart - gap) <= 0.005, "latencies \(apart) s apart, media \(gap) s apart")
            print("delay 0 s vs 5 s: played \(gaps.map { String(format: "%.3f", $0) }.joined(separator: ", ")) s apart")
            #expect(gaps.count >= 4, "too few moments to compare: \(live.events.count) and \(delayed.events.count) events")
            for gap in gaps {
                #expect(abs(gap - 5) <= 0.02, "played \(gap) s apart: \(gaps)")
            }
            #expect(delayed.positions.last?.delay == 5)
            #expect(live.positions.last?.delay == 0)

            // Without a delay stage, the stats stage says what is heard.
            let plainApart = median[2] - median[0]
            print(String(format: "no delay vs 5 s: latencies %.4f s apart; heard %@ s apart", plainApart,
                         heardGaps.map { String(format: "%.3f", $0) }.joined(separator: ", ")))
            #expect(heardGaps.count >= 4, "too few moments to compare: \(plain.events.count) and \(delayed.events.count) events")
            for gap in heardGaps {
                #expect(abs(gap - plainApart) <= 0.05, "heard \(gap) s apart, latencies \(plainApart) s apart")
            }

            // The window did not hold the 5 s: the delayed one said how full it was until it did.
            let started = delayed.firstTime(of: "delay-changed").map { $0.timeIntervalSince(delayed.launched) }
            let percents = delayed.events.filter { $0["event"] as? String == "buffering" }.compactMap { $0["percent"] as? Int }
            print(String(format: "delay 5 s started %.3f s after launch; buffering %@", started ?? -1, "\(percents.filter { $0 > 0 && $0 < 100 })"))
            #expect((started ?? 0) > 2.5)
            #expect(percents.contains { $0 >= 40 && $0 < 100 }, "\(percents)")
            // And that it is full once it plays (what a summary counts buffering up to).
            #expect(percents.last == 100, "\(percents)")
            let notices = [plain, live, delayed].flatMap(\.events).filter { $0["event"] as? String == "notice" }.compactMap { $0["message"] as? String }
            #expect(!notices.contains { $0.contains("live-edge") }, "\(notices)")
        }
    }

    @Test("5 s behind a live stream whose window holds it: playing starts at once (not 5 s later), 5 s ± 0.25 s behind; its recording starts on a keyframe and decodes without an error")
    func startsBackInTheWindow() async throws {
        let scratch = try Scratch()
        let recording = scratch.file("back.mkv")
        // A player starts three target durations (6 s) from the live edge: 5 s behind that
        // is in the window once the playlist lists 6 segments (12 s; 7 here, to spare). Not a
        // whole number of 2 s segments: play-out starts inside a group of pictures.
        try await withTwoListeners(key: "back", segments: 7, delay: "5s", recording: recording) { live, delayed in
            let gaps = try await gapsWhilePlaying(live, delayed, count: 4, within: .seconds(20))
            let playing = delayed.firstTime(of: "state", where: "to", is: "playing")
            let started = playing.map { $0.timeIntervalSince(delayed.launched) }
            let liveStarted = live.firstTime(of: "state", where: "to", is: "playing").map { $0.timeIntervalSince(live.launched) }
            print(String(format: "start back 5 s: playing %.3f s after launch (delay 0: %.3f s); played %@ s apart",
                         started ?? -1, liveStarted ?? -1, gaps.map { String(format: "%.3f", $0) }.joined(separator: ", ")))
            let startedIn = try #require(started, "never played: \(delayed.process.standardError)")
            // Waiting for the history would take 5 s; starting back, it is the usual start-up.
            #expect(startedIn < 2.5, "playing \(startedIn) s after launch")
            #expect(gaps.count >= 4, "too few moments to compare: \(live.events.count) and \(delayed.events.count) events")
            for gap in gaps {
                #expect(abs(gap - 5) <= 0.25, "played \(gap) s apart: \(gaps)")
            }
            #expect(delayed.positions.last?.delay == 5)
            // No GStreamer warning on the way (a segment missing, a timestamp going back).
            #expect(!delayed.process.standardError.contains("WARNING"), "\(delayed.process.standardError.prefix(400))")
            // Started back, the group playing at the start began before the time line did: the
            // recording goes on from the next keyframe, not from the frames that depend on it.
            let packets = try await ChildProcess.run("/usr/bin/ffprobe", [
                "-v", "error", "-select_streams", "v", "-show_entries", "packet=flags", "-of", "csv=p=0", recording,
            ]).stdout.split(separator: "\n")
            #expect(packets.count > 60, "\(packets.count) video packets")
            #expect(packets.first?.hasPrefix("K") == true, "the first video packets: \(packets.prefix(3))")
            let decoded = try await ChildProcess.run("/usr/bin/ffmpeg", ["-v", "error", "-i", recording, "-f", "null", "-"])
            #expect(decoded.stderr.isEmpty, "\(decoded.stderr.prefix(400))")
        }
    }
}
