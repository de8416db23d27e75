import Foundation
import LocalIngest
import TestSupport
import Testing

/// `castline listen` over WebRTC from a WHEP endpoint played by aiortc (Support/whip_server.py),
/// which sends a file ffmpeg made, or relays what a WHIP session publishes, re-encoded as a
/// server's WebRTC stack does.
@Suite("castline listen over WHEP, from aiortc", .serialized, .timeLimit(.minutes(3)))
struct WHEPTests {
    typealias Endpoint = WHIPTests.Endpoint

    /// 10 s of a 1 kHz tone and a moving 320x240 picture, as ffmpeg makes them.
    static func media(in scratch: Scratch) async throws -> String {
        let path = scratch.path + "/tone.mp4"
        let made = try await ChildProcess.run("ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000:duration=10",
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=10", "-c:v", "libx264", "-pix_fmt", "yuv420p",
            "-c:a", "aac", "-shortest", path,
        ], timeout: .seconds(60))
        try #require(made.status == 0, "\(made.stderr)")
        return path
    }

    /// 10 s of castline's test signal at 320x240, rendered as fast as it encodes: aiortc decodes
    /// it and sends it on as its own encode, so what comes back tells castline's WHEP input's A/V sync.
    static func testSignal(in scratch: Scratch) async throws -> String {
        let path = scratch.path + "/signal.mkv"
        let file = try scratch.write("signal.yaml", """
            version: 1
            source: { test: { video: { width: 320, height: 240 }, audio: {}, live: false } }
            stages: [ { encode: {} } ]
            sinks: [ { file: \(path) } ]
            """)
        let made = try await Castline.run(["run", file, "--duration", "10s"])
        try #require(made.status == 0, "\(made.stderr)")
        return path
    }

    @Test("a WHEP listen plays what aiortc sends: Opus and H.264 on the wire, the 1 kHz tone and the 320x240 picture recorded for the time asked, sound and picture within a frame of each other; the link's figures in the stats; the session DELETEd at the end; the token never shown; two load viewers play it too, each its own session")
    func plays() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: WHIPTests.token, source: try await Self.testSignal(in: scratch))
        let recording = scratch.path + "/heard.mkv"
        let result = try await Castline.run(["listen", endpoint.url("whep"), "--token-env", "WHEP_TEST_TOKEN", "--output", "null",
                                             "--duration", "5s", "--record", recording, "--measure-latency", "--stats-json", "-"],
                                            environment: ["WHEP_TEST_TOKEN": WHIPTests.token], timeout: .seconds(60))
        // Two load viewers of the same endpoint, each a session of its own, nothing decoded.
        let load = try await Castline.run(["load", endpoint.url("whep"), "--token-env", "WHEP_TEST_TOKEN", "--viewers", "2", "--ramp", "10/s",
                                           "--duration", "2s", "--stats-json", "-"],
                                          environment: ["WHEP_TEST_TOKEN": WHIPTests.token], timeout: .seconds(60))
        let said = await endpoint.stop()
        #expect(load.status == 0 && !load.stderr.contains(WHIPTests.token) && !load.stdout.contains(WHIPTests.token), "\(load.stderr)")
        let viewers = jsonLines(load.stdout).last { $0["event"] as? String == "load" } ?? [:]
        #expect(viewers["viewers_started"] as? Double == 2 && viewers["viewers_failed"] as? Double == 0 && viewers["stalls"] as? Double == 0,
                "\(viewers)")
        #expect((viewers["ttff_p95_s"] as? Double ?? 9) < 3 && (viewers["bytes"] as? Double ?? 0) > 10_000, "\(viewers)")
        #expect(said.contains("deleted 2") && said.contains("deleted 3"), "each load viewer's session DELETEd: \(said)")
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains(WHIPTests.token) && !result.stdout.contains(WHIPTests.token))
        #expect(said.contains("codecs 1 audio/opus video/H264"), "\(said)")
        #expect(said.contains("connected 1") && said.contains("deleted 1"), "\(said)")

        let probe = try await ChildProcess.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,width,height:format=duration",
                                                           "-of", "default=nw=1", recording])
        #expect(probe.stdout.contains("codec_type=audio") && probe.stdout.contains("width=320") && probe.stdout.contains("height=240"),
                "\(probe.stdout)")
        let duration = probe.stdout.firstMatch(of: /duration=([0-9.]+)/).flatMap { Double($0.output.1) } ?? 0
        #expect(abs(duration - 5) < 0.5, "recorded \(duration) s of 5")
        let frequency = try await WHIPTests.tone(in: recording)
        #expect(abs(frequency - 1000) < 20, "the tone came back at \(frequency) Hz")

        // The link as webrtcbin's receiver counts it, each second: packets keep coming, none lost on loopback.
        let link = jsonLines(result.stdout).filter { $0["stage"] as? String == "source" && $0["packets_received"] != nil }
        let received = link.compactMap { $0["packets_received"] as? Double }
        #expect(received.count >= 3 && zip(received, received.dropFirst()).allSatisfy { $0 < $1 }, "\(received)")
        #expect(link.allSatisfy { $0["packets_lost"] as? Double == 0 && ($0["rtp_jitter_ms"] as? Double ?? -1) >= 0 }, "\(link)")
        // The stream's bitrate is the encoded one (kept encoded into the recording), not a decoded picture's.
        let video = jsonLines(result.stdout).filter { $0["stage"] as? String == "stats0" && $0["stream"] as? String == "video" }
        let bitrate = video.last?["bitrate_10s_kbps"] as? Double ?? 0
        #expect(bitrate > 50 && bitrate < 5000, "video at \(bitrate) kbit/s")
        // The test signal's A/V offset as the latency stage reads it, within a frame at 30 fps
        // (the 60-80 ms of WHIP → aiortc → WHEP is aiortc's relay: its audio jitter buffer holds four packets).
        let offsets = LatencyTests.samples(result.stdout).compactMap { $0["av_offset_ms"] as? Double }
        print("WHEP from aiortc: A/V offset \(offsets.map { String(format: "%.1f", $0) }.joined(separator: ", ")) ms")
        #expect(offsets.count >= 3 && offsets.allSatisfy { abs($0) <= 34 }, "\(offsets)")
    }

    @Test("--audio-only offers audio alone; a refused token (to a listen, to load viewers) and a missing endpoint are one line each, exit 1")
    func audioOnlyAndRefusals() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: WHIPTests.token, source: try await Self.media(in: scratch))
        let tokenFile = try scratch.write("token", WHIPTests.token + "\n")
        let recording = scratch.path + "/heard.wav"
        let heard = try await Castline.run(["listen", endpoint.url("whep"), "--token-file", tokenFile, "--audio-only", "--output", "null",
                                            "--duration", "3s", "--record", recording], timeout: .seconds(60))
        #expect(heard.status == 0, "\(heard.stderr)")
        let frequency = try await WHIPTests.tone(in: recording)
        #expect(abs(frequency - 1000) < 20, "the tone came back at \(frequency) Hz")

        async let refusedLoad = Castline.run(["load", endpoint.url("whep"), "--token-env", "WHEP_TEST_TOKEN", "--viewers", "2",
                                              "--duration", "2s"], environment: ["WHEP_TEST_TOKEN": "not-the-token"], timeout: .seconds(30))
        let refused = try await Castline.run(["listen", endpoint.url("whep"), "--token-env", "WHEP_TEST_TOKEN", "--output", "null"],
                                             environment: ["WHEP_TEST_TOKEN": "not-the-token"], timeout: .seconds(30))
        #expect(refused.status == 1)
        let loadRefused = try await refusedLoad
        #expect(loadRefused.status == 1 && !loadRefused.stderr.contains("not-the-token"), "\(loadRefused.stderr)")
        #expect(loadRefused.stderr.contains("error: every viewer failed: the WHEP endpoint refused the token"), "\(loadRefused.stderr)")
        #expect(refused.stderr.contains("the WHEP endpoint refused the token: http://127.0.0.1:\(endpoint.port)/**** (HTTP 401)"),
                "\(refused.stderr)")
        let missing = try await Castline.run(["listen", endpoint.url("nowhere/whep"), "--output", "null"], timeout: .seconds(30))
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("no WHEP endpoint at http://127.0.0.1:\(endpoint.port)/**** (HTTP 404)")
                && missing.stderr.contains("--wait-for-live"), "\(missing.stderr)")
        let said = await endpoint.stop()
        #expect(said.contains("codecs 1 audio/opus"), "\(said)")
        #expect(!said.contains { $0.hasPrefix("offer 2") }, "only the audio-only listen got past the token: \(said)")
    }

    @Test("an endpoint that never answers: one line within the timeout, its path masked; Ctrl-C while it waits ends the listen within a second, exit 0")
    func neverAnswers() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: nil)
        let timedOut = try await Castline.run(["listen", endpoint.url("silent/whep"), "--timeout", "2s", "--output", "null"],
                                              timeout: .seconds(30))
        #expect(timedOut.status == 1, "\(timedOut.stderr)")
        #expect(timedOut.stderr.contains("the WHEP endpoint at http://127.0.0.1:\(endpoint.port)/**** did not answer the offer in 2.0 s")
                && !timedOut.stderr.contains("silent/whep"), "\(timedOut.stderr)")

        let listener = try Castline.start(["listen", endpoint.url("silent/whep"), "--output", "null"])
        // The endpoint has this listener's offer (its second): castline waits on the answer.
        try #require(await Castline.waitFor("silent 2", in: endpoint.process, timeout: .seconds(20)), "\(listener.standardError)")
        let stopping = ContinuousClock.now
        let status = await Castline.interrupt(listener, with: SIGINT, within: .seconds(5))
        _ = await endpoint.stop()
        #expect(ContinuousClock.now - stopping < .seconds(1), "stopping took \(ContinuousClock.now - stopping)")
        #expect(status == 0, "\(listener.standardError)")
    }

    @Test("the endpoint killed mid-run: the silence is noticed, the listen reconnects to the endpoint restarted and goes on recording the tone")
    func reconnects() async throws {
        let scratch = try Scratch()
        let media = try await Self.media(in: scratch)
        let first = try await Endpoint(scratch: scratch, token: nil, source: media)
        let recording = scratch.path + "/heard.wav"
        let listener = try Castline.start(["listen", first.url("whep"), "--output", "null", "--duration", "6s", "--record", recording,
                                           "--stats-json", "-"])
        // The tone heard (its level in the stats) before the endpoint goes: a loss, not a start that never played.
        let heard = await waitUntil(.seconds(20)) { jsonLines(listener.standardOutput).contains { ($0["rms_dbfs"] as? Double ?? -120) > -40 } }
        try #require(heard, "\(listener.standardError)")
        // Gone without a word, as a crashed server or a dropped network: no BYE, no DTLS alert.
        first.process.signal(SIGKILL)
        _ = await first.stop()
        let second = try await Endpoint(scratch: scratch, token: nil, port: first.port, source: media)
        #expect(await Castline.waitFor("reconnected after 1 attempt", in: listener, timeout: .seconds(20)), "\(listener.standardError)")
        let status = await listener.waitForExit(timeout: .seconds(60))
        await listener.waitForOutput()
        let said = await second.stop()
        #expect(status == 0, "\(listener.standardError)")
        #expect(listener.standardError.contains("connection lost (no media for 5 s)"), "\(listener.standardError)")
        #expect(listener.standardError.contains("reconnects 1"), "\(listener.standardError)")
        #expect(said.contains("connected 1") && said.contains("deleted 1"), "the new session, ended at the end: \(said)")
        // --duration counts media: the 5 s unheard before the loss was noticed, and the reconnect,
        // are not media, so the recording holds the whole 6 s, the tone to its end.
        let probe = try await ChildProcess.run("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1", recording])
        let duration = probe.stdout.firstMatch(of: /duration=([0-9.]+)/).flatMap { Double($0.output.1) } ?? 0
        #expect(abs(duration - 6) < 0.3, "recorded \(duration) s")
        let frequency = try await WHIPTests.tone(in: recording, from: max(0, duration - 2.5))
        #expect(abs(frequency - 1000) < 20, "after the reconnect, the tone came back at \(frequency) Hz")
    }

    @Test("an endpoint that answers and then sends nothing: the listen tries new sessions, then fails with one line (no media in --end-after), exit 1")
    func answersButNeverSends() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: nil)
        let began = ContinuousClock.now
        let result = try await Castline.run(["listen", endpoint.url("mute/whep"), "--output", "null", "--end-after", "8s"], timeout: .seconds(40))
        _ = await endpoint.stop()
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("no media from the WHEP endpoint http://127.0.0.1:\(endpoint.port)/**** in 8 s"), "\(result.stderr)")
        #expect(result.stderr.contains("connection lost (no media came in 5 s)"), "\(result.stderr)")
        #expect(ContinuousClock.now - began < .seconds(20))
    }

    @Test("glass to glass: castline latency through WHIP → aiortc → WHEP (one token for both, never shown) reads the clock back every second, under a second behind")
    func glassToGlass() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: WHIPTests.token)
        // The listener asks first and is answered 404 until the broadcast publishes: it waits for live.
        let result = try await Castline.run(["latency", endpoint.url("whip"), "--play", endpoint.url("whep"), "--duration", "8s",
                                             "--token-env", "WHIP_TEST_TOKEN"],
                                            environment: ["WHIP_TEST_TOKEN": WHIPTests.token], timeout: .seconds(90))
        _ = await endpoint.stop()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stderr.contains(WHIPTests.token) && !result.stdout.contains(WHIPTests.token))
        let output = result.stdout + result.stderr
        let lines = output.split(separator: "\n").filter { $0.contains("latency: ") }
        // Each second, sound and picture both read, from the first line that has both (before it the
        // reader learns the tone's level, as the sound starts) to the last but one (the broadcast may
        // end before that second's beep): no second in between without either.
        func both(_ line: Substring) -> Bool { line.firstMatch(of: /sound ([0-9.]+) s, picture ([0-9.]+) s/) != nil }
        let read = lines.drop(while: { !both($0) }).dropLast().map { line -> (sound: Double, picture: Double) in
            guard let match = line.firstMatch(of: /sound ([0-9.]+) s, picture ([0-9.]+) s/),
                  let sound = Double(match.output.1), let picture = Double(match.output.2) else { return (-1, -1) }
            return (sound, picture)
        }
        #expect(read.count >= 4, "\(lines)")
        #expect(read.allSatisfy { $0.sound > 0.05 && $0.sound < 1 && $0.picture > 0.05 && $0.picture < 1 }, "\(read)")
    }

    @Test("a WHEP listen with a delay stage: the delay moved by 2 s reads 2 s more latency from the test signal's clock (WHIP → aiortc → WHEP)")
    func delayMoves() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: nil)
        let broadcast = try Castline.start(["broadcast", endpoint.url("whip"), "--size", "320x240", "--duration", "40s"])
        defer { Task { await broadcast.terminate() } }
        try await ControlAPITests.withControl([
            "listen", endpoint.url("whep"), "--wait-for-live", "--audio-only", "--output", "null", "--delay", "0s", "--measure-latency",
        ]) { api, process in
            // Once 2.5 s of history is held, the delay moved by exactly 2 s moves the latency read from the media by that.
            let (start, moved, delayMoved) = try await api.latencyAcrossDelay(to: 2, historyTimeout: .seconds(30))
            print(String(format: "WHEP, delay 0 → %.4f s: latency %.4f → %.4f s (%.4f)", delayMoved, start, moved, moved - start))
            #expect(start > 0.05 && start < 1, "latency at delay 0: \(start) s")
            #expect(abs(moved - start - delayMoved) <= 0.05, "latency \(start) then \(moved), the delay moved \(delayMoved) s")
            #expect(process.isRunning, "\(process.standardError)")
        }
        _ = await endpoint.stop()
    }
}
