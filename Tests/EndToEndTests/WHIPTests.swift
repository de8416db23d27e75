import Foundation
import LocalIngest
import Testing

/// `castline broadcast` over WebRTC to a WHIP endpoint played by aiortc (Support/whip_server.py),
/// an independent stack that refuses RSA DTLS certificates and H.264 High, as real servers do.
@Suite("castline broadcast over WHIP, to aiortc", .serialized, .timeLimit(.minutes(3)))
struct WHIPTests {
    /// aiortc's WHIP endpoint on a free port, recording what arrives into `folder`.
    final class Endpoint: Sendable {
        let port: Int
        let process: ChildProcess
        let folder: String

        /// `port`: another endpoint's, after it has gone (a server restarted); nil: a free one.
        /// `source`: the media file a WHEP session sends.
        init(scratch: Scratch, token: String?, port: Int? = nil, source: String? = nil) async throws {
            let port = try port ?? FreePort.find()
            self.port = port
            folder = scratch.path
            let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/whip_server.py").path
            process = ChildProcess(executable: ControlPageTests.python, arguments: [script, "\(port)", folder] + (token.map { ["--token", $0] } ?? [])
                                       + (source.map { ["--source", $0] } ?? []))
            try process.start()
            guard await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(20)) else {
                await process.terminate()
                throw ProbeError(message: "the WHIP endpoint did not start: \(process.standardError)")
            }
        }

        func url(_ path: String) -> String { "http://127.0.0.1:\(port)/\(path)" }

        /// Stops the endpoint; what it said, line by line.
        func stop() async -> [String] {
            await process.terminate(grace: .milliseconds(500))
            await process.waitForOutput()
            return process.standardError.split(separator: "\n").map(String.init)
        }
    }

    static let token = "whip-test-token-9f3c1a"

    @Test("a test broadcast reaches aiortc: H.264 and Opus on the wire, its pictures decoded and its 1 kHz tone recorded, the session DELETEd at the end; the token never shown")
    func publishes() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: Self.token)
        let result = try await Castline.run(["broadcast", endpoint.url("whip"), "--token-env", "WHIP_TEST_TOKEN", "--size", "640x360",
                                             "--duration", "6s", "--stats-json", "-"], environment: ["WHIP_TEST_TOKEN": Self.token], timeout: .seconds(60))
        let said = await endpoint.stop()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("whip: published"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.token) && !result.stdout.contains(Self.token))
        // The link as aiortc's RTCP receiver reports say it, on loopback: a round trip under 50 ms, nothing lost.
        let link = jsonLines(result.stdout).filter { $0["stage"] as? String == "whip0" && $0["rtt_ms"] != nil }
        #expect(!link.isEmpty && link.allSatisfy { ($0["rtt_ms"] as? Double ?? -1) > 0 && ($0["rtt_ms"] as? Double ?? 99) < 50 }, "\(link)")
        #expect(link.last?["packets_lost"] as? Double == 0, "\(link.last ?? [:])")
        // The stop is at once (the end has gone into webrtcbin: nothing waits for an end-of-stream
        // it keeps to itself), and what was sent is read after it: all the payload, not a second before.
        let summary = result.stderr.firstMatch(of: /summary: ([0-9.]+) s/).flatMap { Double($0.output.1) } ?? 99
        #expect(summary < 7.5, "a 6 s broadcast's run took \(summary) s: \(result.stderr)")
        let samples = jsonLines(result.stdout)
        func last(_ stage: String, _ stream: String?, _ figure: String) -> Double {
            samples.last { $0["stage"] as? String == stage && $0["stream"] as? String == stream && $0[figure] != nil }?[figure] as? Double ?? 0
        }
        let encoded = last("stats1", "video", "bytes") + last("stats1", "audio", "bytes"), sent = last("whip0", nil, "sent_bytes")
        #expect(sent >= 0.97 * encoded, "\(sent) bytes sent of \(encoded) encoded")
        // What aiortc chose from the offer: the codecs on the wire.
        #expect(said.contains("codecs 1 audio/opus video/H264"), "\(said)")
        #expect(said.contains("connected 1") && said.contains("deleted 1") && said.contains("closed 1"), "\(said)")

        // aiortc decoded what it received: the pictures at the size sent, the sound written out.
        let video = said.first { $0.hasPrefix("video 1 ") }?.split(separator: " ") ?? []
        #expect(video.count == 4 && (Int(video[2]) ?? 0) >= 100 && video[3] == "640x360", "\(said)")
        let recording = endpoint.folder + "/session-1.wav"
        let probe = try await ChildProcess.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,sample_rate:format=duration",
                                                           "-of", "default=nw=1", recording])
        #expect(probe.stdout.contains("codec_type=audio") && probe.stdout.contains("sample_rate=48000"), "\(probe.stdout)")
        let duration = probe.stdout.firstMatch(of: /duration=([0-9.]+)/).flatMap { Double($0.output.1) } ?? 0
        #expect(duration >= 4.0, "recorded \(duration) s")
        // The published time is the media the far end had: what waited while it connected included.
        let published = result.stderr.firstMatch(of: /whip: published ([0-9.]+) s/).flatMap { Double($0.output.1) } ?? 0
        print("WHIP: published \(published) s; aiortc recorded \(duration) s of sound, \(video.count == 4 ? video[2] : "?") pictures")
        #expect(abs(published - duration) < 0.4, "published \(published) s, aiortc recorded \(duration) s")
        let frequency = try await Self.tone(in: recording)
        #expect(abs(frequency - 1000) < 20, "the tone came back at \(frequency) Hz")
    }

    @Test("a refused token (401) and a missing endpoint (404): one line naming the cause, exit 1, no retry; a 307 to the endpoint is followed")
    func refusalsAndRedirect() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: Self.token)
        let began = ContinuousClock.now
        let refused = try await Castline.run(["broadcast", endpoint.url("whip"), "--token-env", "WHIP_TEST_TOKEN", "--duration", "20s"],
                                             environment: ["WHIP_TEST_TOKEN": "not-the-token"], timeout: .seconds(30))
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("error: the WHIP endpoint refused the token: http://127.0.0.1:\(endpoint.port)/**** (HTTP 401)"),
                "\(refused.stderr)")
        let missing = try await Castline.run(["broadcast", endpoint.url("nowhere/whip"), "--duration", "20s"], timeout: .seconds(30))
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("error: no WHIP endpoint at http://127.0.0.1:\(endpoint.port)/**** (HTTP 404)"), "\(missing.stderr)")
        // Neither waited for its 20 s nor retried.
        #expect(ContinuousClock.now - began < .seconds(15))
        for result in [refused, missing] { #expect(!result.stderr.contains("reconnecting"), "\(result.stderr)") }

        let tokenFile = try scratch.write("token", Self.token + "\n")
        let moved = try await Castline.run(["broadcast", "--whip", endpoint.url("moved"), "--token-file", tokenFile, "--size", "320x180",
                                            "--duration", "3s"], timeout: .seconds(30))
        let said = await endpoint.stop()
        #expect(moved.status == 0, "\(moved.stderr)")
        #expect(said.contains("connected 1") && said.contains("deleted 1"), "\(said)")
    }

    @Test("a media file goes out in real time (a live source is not waited on for each buffer; a file is): 10 s of it take 10 s, all of it reaches aiortc")
    func fileGoesOutInRealTime() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: nil)
        let media = try await WHEPTests.media(in: scratch)
        let file = try scratch.write("file-whip.yaml", """
            version: 1
            source: { uri: { uri: "file://\(media)" } }
            stages: [ { encode: { video: { profile: constrained-baseline }, audio: { codec: opus } } } ]
            sinks: [ { whip: { url: "\(endpoint.url("whip"))" } } ]
            """)
        let began = ContinuousClock.now
        let result = try await Castline.run(["run", file], timeout: .seconds(60))
        let took = ContinuousClock.now - began
        let said = await endpoint.stop()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(took > .seconds(9.5), "10 s of media went out in \(took)")
        // 25 pictures a second: all but what the connection's start took.
        let video = said.first { $0.hasPrefix("video 1 ") }?.split(separator: " ") ?? []
        #expect(video.count == 4 && (Int(video[2]) ?? 0) >= 225, "\(said)")
        #expect(!result.stderr.contains("profile"), "\(result.stderr)")
    }

    @Test("an encode stage that makes High for a whip sink is told once: the offer names constrained baseline, and how to encode that")
    func highProfileIsTold() async throws {
        let scratch = try Scratch()
        let endpoint = try await Endpoint(scratch: scratch, token: nil)
        let file = try scratch.write("high-whip.yaml", """
            version: 1
            source: { test: { video: { width: 320, height: 180 } } }
            stages: [ { encode: { video: { profile: high } } } ]
            sinks: [ { whip: { url: "\(endpoint.url("whip"))" } } ]
            """)
        let result = try await Castline.run(["run", file, "--duration", "2s"], timeout: .seconds(40))
        _ = await endpoint.stop()
        #expect(result.status == 0, "\(result.stderr)")
        let told = result.stderr.split(separator: "\n").filter { $0.contains("profile") }
        #expect(told == ["whip0: the H.264 sent is high profile, and the offer names constrained baseline: a WebRTC player may not "
                         + "play it (encode it so before: encode: { video: { profile: constrained-baseline } })"], "\(result.stderr)")
    }

    @Test("an endpoint that takes the connection and never answers the offer is said to be that, not ICE or DTLS")
    func unansweredOffer() async throws {
        let silent = try SilentTCPListener()
        defer { silent.close() }
        let result = try await Castline.run(["broadcast", "http://127.0.0.1:\(silent.port)/whip", "--size", "320x180", "--duration", "20s"],
                                            timeout: .seconds(40))
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("error: the WHIP endpoint at http://127.0.0.1:\(silent.port)/**** did not answer the offer in"),
                "\(result.stderr)")
    }

    @Test("the endpoint killed mid-run: the silence is noticed, the publish reconnects to the endpoint restarted and goes on; the silent time is not published time")
    func reconnects() async throws {
        let scratch = try Scratch()
        let first = try await Endpoint(scratch: scratch, token: nil)
        let process = try Castline.start(["broadcast", first.url("whip"), "--size", "320x180", "--duration", "13s"])
        try #require(await Castline.waitFor("connected 1", in: first.process, timeout: .seconds(20)), "\(process.standardError)")
        // Gone without a word, as a crashed server or a dropped network: no BYE, no DTLS alert.
        first.process.signal(SIGKILL)
        _ = await first.stop()
        let second = try await Endpoint(scratch: scratch, token: nil, port: first.port)
        #expect(await Castline.waitFor("reconnected after 1 attempt", in: process, timeout: .seconds(20)), "\(process.standardError)")
        let status = await process.waitForExit(timeout: .seconds(60))
        await process.waitForOutput()
        let said = await second.stop()
        #expect(status == 0, "\(process.standardError)")
        #expect(process.standardError.contains("connection lost (no answer in 5 s)"), "\(process.standardError)")
        #expect(process.standardError.contains("reconnects: 1"), "\(process.standardError)")
        // The second endpoint decoded pictures: media flows on the new connection.
        let video = said.first { $0.hasPrefix("video 1 ") }?.split(separator: " ") ?? []
        #expect(video.count == 4 && (Int(video[2]) ?? 0) >= 90, "\(said)")
        // 13 s of media, of which about 5 s went to a far end that had gone before it was noticed,
        // and a second or two to reconnecting: none of that is published (counted, it would be 11 s or more).
        let published = process.standardError.firstMatch(of: /whip: published ([0-9.]+) s/).flatMap { Double($0.output.1) } ?? 0
        #expect(published > 3 && published < 9.5, "published \(published) s")
    }

    /// The tone's frequency in a recording: the median over 20 ms windows of the rate of their
    /// zero crossings (from the first to the last), from `start` for 2 s (in the test signal, the
    /// tone fills more than half of each second; beeps and code the rest).
    static func tone(in path: String, from start: Double = 1) async throws -> Double {
        let raw = path + ".f32"
        let decode = try await ChildProcess.run("ffmpeg", ["-v", "error", "-y", "-ss", "\(start)", "-t", "2", "-i", path, "-vn", "-ac", "1",
                                                           "-ar", "48000", "-f", "f32le", raw])
        try #require(decode.status == 0, "\(decode.stderr)")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let window = 960
        let rates = stride(from: 0, to: samples.count - window, by: window).compactMap { start -> Double? in
            let crossings = (start + 1..<start + window).filter { (samples[$0 - 1] < 0) != (samples[$0] < 0) }
            guard let first = crossings.first, let last = crossings.last, last > first else { return nil }
            return Double(crossings.count - 1) / 2 / (Double(last - first) / 48000)
        }.sorted()
        return rates.isEmpty ? 0 : rates[rates.count / 2]
    }

    @Test("ice-servers: relay-only publishes through a real TURN relay (coturn), aiortc sees the media come from the relay, and the relay's password shows nowhere; without relay-only the pair is direct")
    func throughTURN() async throws {
        let scratch = try Scratch()
        // The relay on the machine's own address: libnice and aioice leave loopback out.
        let address = try #require(try await ChildProcess.run("hostname", ["-I"]).stdout.split(separator: " ").first.map(String.init))
        let port = try FreePort.find()
        let password = "relay-pass:9@x"
        let relay = ChildProcess(executable: "/usr/bin/turnserver", arguments: [
            "-n", "--listening-ip=\(address)", "--relay-ip=\(address)", "--listening-port=\(port)", "--realm=castline",
            "--lt-cred-mech", "--user=caster:\(password)", "--no-tls", "--no-dtls", "--no-cli", "--log-file=stdout", "--verbose",
            "--allow-loopback-peers",
        ])
        try relay.start()
        defer { Task { await relay.terminate() } }
        try #require(await PortProbe.waitUntilOpen(host: address, port: port, timeout: .seconds(10)), "\(relay.standardOutput)")
        let endpoint = try await Endpoint(scratch: scratch, token: nil)
        func publish(relayOnly: Bool) async throws -> Castline.Result {
            let file = try scratch.write("relayed.yaml", """
                version: 1
                name: relayed
                source: { test: { video: { width: 320, height: 240 }, audio: {} } }
                stages: [ { encode: { video: { profile: constrained-baseline }, audio: { codec: opus } } } ]
                sinks:
                  - whip:
                      url: \(endpoint.url("whip"))
                      ice-servers: { turn: "turn:\(address):\(port)", username: caster, credential: "${TURN_PASSWORD}", relay-only: \(relayOnly) }
                """)
            return try await Castline.run(["run", file, "--duration", "3s", "--stats-json", "-"], environment: ["TURN_PASSWORD": password],
                                          timeout: .seconds(40))
        }
        let relayed = try await publish(relayOnly: true)
        let direct = try await publish(relayOnly: false)
        let said = await endpoint.stop()
        // A WHEP listen through the relay only, from an endpoint that sends a file.
        let sender = try await Endpoint(scratch: scratch, token: nil, source: try await WHEPTests.media(in: scratch))
        let listenFile = try scratch.write("listen.yaml", """
            version: 1
            name: relayed-listen
            source:
              whep:
                url: \(sender.url("whep"))
                ice-servers: { turn: "turn:\(address):\(port)", username: caster, credential-file: \(try scratch.write("turn-password", password)), relay-only: true }
            sinks: [ { null: {} } ]
            """)
        let listened = try await Castline.run(["run", listenFile, "--duration", "3s"], timeout: .seconds(40))
        let sent = await sender.stop()
        #expect(listened.status == 0 && !listened.stderr.contains("relay-pass"), "\(listened.stderr)")
        #expect(listened.stderr.contains("source: ICE pair: this end relay \(address):"), "\(listened.stderr)")
        #expect(sent.contains("pair 1 remote relay"), "relay-only: castline's end of the WHEP session must be the relay: \(sent)")
        // GStreamer's own dump of the built pipeline, every property of webrtcbin in it: the relay is not among them.
        let dump = try await Castline.run(["graph", scratch.file("relayed.yaml"), "--gst"], environment: ["TURN_PASSWORD": password])
        #expect(dump.stdout.contains("ice-agent=(GstWebRTCNice) webrtcbin0"), "\(dump.stdout.prefix(400))\(dump.stderr)")
        for result in [relayed, direct, dump] {
            #expect(result.status == 0, "\(result.stderr)")
            for shown in [result.stdout, result.stderr] {
                #expect(!shown.contains(password) && !shown.contains("relay-pass%3A9%40x") && !shown.contains("relay-pass"),
                        "the relay's password shown: \(shown.prefix(2000))")
            }
        }
        #expect(relayed.stderr.contains("whip: published") && direct.stderr.contains("whip: published"), "\(relayed.stderr)\(direct.stderr)")
        // The pair as castline reports it agrees with aiortc's (webrtcbin 1.22 files the candidates under each other's names).
        #expect(relayed.stderr.contains("whip0: ICE pair: this end relay \(address):") && relayed.stderr.contains("the far end host"),
                "\(relayed.stderr)")
        #expect(direct.stderr.contains("whip0: ICE pair: this end host "), "\(direct.stderr)")
        let relayedFigure = jsonLines(relayed.stdout).compactMap { $0["ice_relayed"] as? Double }
        let directFigure = jsonLines(direct.stdout).compactMap { $0["ice_relayed"] as? Double }
        #expect(!relayedFigure.isEmpty && relayedFigure.allSatisfy { $0 == 1 } && !directFigure.isEmpty && directFigure.allSatisfy { $0 == 0 },
                "\(relayedFigure) \(directFigure)")
        #expect(said.contains("pair 1 remote relay"), "relay-only: castline's media must come from the relay: \(said)")
        #expect(said.contains("pair 2 remote host"), "\(said)")
        #expect(said.contains { $0.hasPrefix("video 1 ") } && said.contains("closed 1"), "\(said)")
        await relay.terminate()
        await relay.waitForOutput()
        #expect(relay.standardOutput.contains("CHANNEL_BIND processed, success"), "the relay never carried a channel")
    }
}
