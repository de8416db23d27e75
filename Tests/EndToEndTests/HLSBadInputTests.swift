import Foundation
import LocalIngest
import Testing

/// A server that misbehaves on purpose (Support/hostile_hls.py): castline says
/// what is wrong in one line, rides out what may pass as `reconnecting`, never
/// hangs and never crashes.
@Suite("castline listen: hostile HLS servers", .serialized, .timeLimit(.minutes(3)))
struct HLSBadInputTests {
    /// The hostile server on a free port, serving a real 2 s MPEG-TS segment of a tone.
    final class HostileServer: Sendable {
        let port: Int
        let process: ChildProcess

        /// `run`: /stall.m3u8's segments are one 90 s tone cut in 2 s segments, for players that decode it
        /// (`video`: with a picture).
        init(scratch: Scratch, run: Bool = false, video: Bool = false) async throws {
            // As long as the playlists say their segments are (2 s).
            try await HLSFixtures.transportStream("tone.ts", in: scratch.path, seconds: 2)
            if run {
                try await HLSFixtures.ffmpeg(HLSFixtures.inputs(seconds: 90, video: video) + HLSFixtures.codecs(video: video)
                                             + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "run-%d.ts",
                                                "run.m3u8"], in: scratch.path)
            }
            port = try FreePort.find()
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/hostile_hls.py").path
            process = ChildProcess(executable: ChildProcess.which("python3") ?? "/usr/bin/python3",
                                   arguments: [script, "\(port)", scratch.file("tone.ts")] + (run ? [scratch.path] : []))
            try process.start()
            guard await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(10)) else {
                await process.terminate()
                throw ProbeError(message: "the hostile server did not start: \(process.standardError)")
            }
        }

        func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }
        func stop() async { await process.terminate(grace: .milliseconds(200)) }
    }

    private func listen(_ url: String, _ extra: [String] = [], timeout: Duration = .seconds(30)) async throws -> Castline.Result {
        try await Castline.run(["listen", url, "--audio-only", "--output", "null"] + extra, timeout: timeout)
    }

    @Test("a redirect loop, a 2 MB line, an empty live playlist: one line each, exit 2, promptly")
    func refusedAtStart() async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let loop = try await listen(server.url("redirect-loop.m3u8"))
        #expect(loop.status == 2 && loop.stderr.contains("more than 10 redirects"), "\(loop.stderr)")
        let huge = try await listen(server.url("huge-line.m3u8"))
        #expect(huge.status == 2 && huge.stderr.contains("too large"), "\(huge.stderr)")
        let began = ContinuousClock.now
        let empty = try await listen(server.url("empty.m3u8"), ["--end-after", "3s"])
        #expect(empty.status == 2 && empty.stderr.contains("listed no segment within 3s"), "\(empty.stderr)")
        #expect(empty.stderr.contains("still connecting: waiting for the playlist \(server.url("empty.m3u8")) to list a segment"),
                "\(empty.stderr)")
        #expect(ContinuousClock.now - began < .seconds(8))
        for result in [loop, huge, empty] {
            #expect(result.stderr.split(separator: "\n").filter { !$0.hasPrefix("connecting") && !$0.hasPrefix("still connecting") }.count == 1, "\(result.stderr)")
        }
    }

    @Test("a server that never answers: a clear line within the timeout (--timeout 3s), not a hang")
    func neverAnswers() async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let began = ContinuousClock.now
        let silent = try await listen(server.url("silent.m3u8"), ["--timeout", "3s"], timeout: .seconds(30))
        #expect(silent.status == 1 && silent.stderr.contains("no answer from \(server.url("silent.m3u8")) within 3 s"), "\(silent.stderr)")
        #expect(ContinuousClock.now - began < .seconds(6), "took \(ContinuousClock.now - began)")
    }

    @Test("a start stuck on a server that never answers says so; SIGTERM or Ctrl-C ends it within a second, exit 0", arguments: [SIGTERM, SIGINT])
    func stopsWhileConnecting(_ signal: Int32) async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let listener = try Castline.start(["listen", server.url("silent.m3u8"), "--audio-only", "--output", "null"])
        let deadline = ContinuousClock.now + .seconds(10)
        // The stuck start says what it waits on; the fetch is still inside its 10 s timeout.
        let waiting = "still connecting: waiting for the playlist \(server.url("silent.m3u8")) to answer"
        while ContinuousClock.now < deadline, listener.exitStatus == nil, !listener.standardError.contains(waiting) {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(listener.standardError.contains(waiting), "\(listener.standardError)")
        #expect(listener.exitStatus == nil, "\(listener.standardError)")
        let stopping = ContinuousClock.now
        let status = await Castline.interrupt(listener, with: signal, within: .seconds(5))
        #expect(ContinuousClock.now - stopping < .seconds(1), "stopping took \(ContinuousClock.now - stopping)")
        #expect(status == 0, "\(listener.standardError)")
    }

    @Test("a first segment that 404s or is garbage: one line naming it, exit 2")
    func badFirstSegment() async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let missing = try await listen(server.url("live-404.m3u8"))
        #expect(missing.status == 2 && missing.stderr.contains("HTTP 404"), "\(missing.stderr)")
        let garbage = try await listen(server.url("garbage.m3u8"))
        #expect(garbage.status == 2 && garbage.stderr.contains("not MPEG-TS"), "\(garbage.stderr)")
    }

    @Test("segments that start to 404 mid-stream: skipped with a warning, then reconnecting; SIGTERM ends it within a second, exit 0")
    func segmentsGoMissing() async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let listener = try Castline.start(["listen", server.url("turns-404.m3u8"), "--audio-only", "--output", "null"])
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline, listener.exitStatus == nil, !listener.standardError.contains("\nreconnecting") {
            try await Task.sleep(for: .milliseconds(200))
        }
        let text = listener.standardError
        #expect(text.contains("skipped: the server answered HTTP 404"), "\(text)")
        #expect(text.contains("\nreconnecting"), "\(text)")
        let stopping = ContinuousClock.now
        let status = await Castline.interrupt(listener, with: SIGTERM)
        #expect(ContinuousClock.now - stopping < .seconds(1), "stopping took \(ContinuousClock.now - stopping)")
        #expect(status == 0, "\(listener.standardError)")
    }

    @Test("""
        programme times that jump 8 s back after a discontinuity (a backup encoder took over): latency_s follows \
        each segment's own date, 8 s more from there, with no stall; beside it, --delay past what the window holds: \
        while it fills nothing plays and latency_s is not said, then it is the delay more
        """)
    func programmeTimeJumps() async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch, run: true, video: true)
        defer { Task { await server.stop() } }
        // The window holds 10 s: 12 s behind the other listener fills for a while before anything plays.
        async let delayedRun = listen(server.url("jump.m3u8"), ["--delay", "12s", "--duration", "3s", "--stats-json", "-"],
                                      timeout: .seconds(60))
        // Audio and video, which start apart: what plays is placed on one time line whichever left last.
        let run = try await Castline.run(["listen", server.url("jump.m3u8"), "--output", "null", "--duration", "10s", "--stats-json", "-"],
                                         timeout: .seconds(60))
        #expect(run.status == 0 && run.stderr.contains("buffering 0.0 s"), "\(run.stderr)")
        let latencies = jsonLines(run.stdout).compactMap { $0["event"] as? String == "stats" ? $0["latency_s"] as? Double : nil }
        // Played without a stall, what plays is as far behind its date throughout: a step of the jump, nothing
        // else. A reading taken while the null output waits on a late buffer is that much higher (never lower).
        let least = try #require(latencies.min())
        let before = latencies.filter { $0 < least + 4 }, after = latencies.filter { $0 >= least + 4 }
        #expect(before.count >= 3 && after.count >= 3, "latency_s \(latencies)")
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        #expect(abs(median(after) - median(before) - 8) < 0.05, "latency_s \(latencies)")
        #expect(after.allSatisfy { $0 > least + 8 - 0.05 }, "latency_s \(latencies)")

        let delayed = try await delayedRun
        #expect(delayed.status == 0, "\(delayed.stderr)")
        let events = jsonLines(delayed.stdout)
        let playing = events.first { $0["event"] as? String == "state" && $0["to"] as? String == "playing" }.flatMap(DelayListener.time)
        var (filling, played): ([Double], [Double]) = ([], [])
        for event in events where event["event"] as? String == "stats" {
            guard let latency = event["latency_s"] as? Double, let time = DelayListener.time(event) else { continue }
            if let playing, time >= playing { played.append(latency) } else { filling.append(latency) }
        }
        #expect(filling.isEmpty, "latency_s said while nothing played: \(filling)")
        // It plays from before the jump: as far behind its dates as the other was there, and 12 s more.
        let behind = try #require(played.min(), "no latency_s once playing: \(delayed.stdout.suffix(600))")
        #expect(abs(behind - median(before) - 12) < 0.3, "latency_s \(played) with --delay 12s, \(before) without")
    }

    @Test("100,000 segments: plays from the live edge within 2 s (debug build); BOM and CRLF read as usual")
    func bigAndOdd() async throws {
        let scratch = try Scratch()
        let server = try await HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let big = try await listen(server.url("big.m3u8"), ["--duration", "1s", "--stats-json", scratch.file("big.jsonl")])
        #expect(big.status == 0, "\(big.stderr)")
        let events = jsonLines(try String(contentsOfFile: scratch.file("big.jsonl"), encoding: .utf8))
        let times = events.compactMap { event -> (String, Date)? in
            guard let kind = event["event"] as? String, let time = DelayListener.time(event) else { return nil }
            return (kind == "state" ? "state-\(event["to"] as? String ?? "")" : kind, time)
        }
        let connecting = try #require(times.first { $0.0 == "state-connecting" }?.1)
        let playing = try #require(times.first { $0.0 == "state-playing" }?.1, "\(big.stderr)")
        // The debug build reads the 2.4 MB playlist in 0.6-1.0 s on two busy cores (the release build in
        // a fraction of that); a reader that slowed with the playlist's length would take far longer.
        #expect(playing.timeIntervalSince(connecting) < 2, "playing \(playing.timeIntervalSince(connecting)) s after connecting")
        let bom = try await listen(server.url("bom-crlf.m3u8"), ["--record", scratch.file("bom.wav")])
        #expect(bom.status == 0, "\(bom.stderr)")
        let media = try await ProbedMedia.probe(scratch.file("bom.wav"))
        #expect(media.duration > 3, "recorded \(media.duration) s of 2 segments")
    }
}
