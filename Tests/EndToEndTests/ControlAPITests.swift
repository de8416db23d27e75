import Foundation
import LocalIngest
import Testing

/// `--control`: the control API of a running castline, `castline ctl`, and the
/// token that a bind beyond loopback needs.
@Suite("control API", .serialized, .timeLimit(.minutes(3)))
struct ControlAPITests {
    /// A tone through a delay stage (so there is a delay to move) and a stats stage (so there are figures).
    static let delayedTone = """
        version: 1
        name: control-e2e
        source:
          test:
            audio: { tone: 440 }
        stages:
          - delay: { initial: 0s, max: 1m }
          - stats: { every: 500ms, name: meter }
        sinks:
          - null: {}
        """

    /// Starts castline with `arguments` plus `--control 127.0.0.1:PORT`, waits for the API, runs `body`, stops it.
    static func withControl(
        _ arguments: [String], environment: [String: String] = [:], bind: String = "127.0.0.1",
        _ body: (ControlHTTP, ChildProcess) async throws -> Void
    ) async throws {
        let port = try FreePort.find()
        let process = try Castline.start(arguments + ["--control", "\(bind):\(port)"], environment: environment)
        do {
            try #require(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(20)),
                         "no control API: \(process.standardError)")
            try await body(ControlHTTP(port: port), process)
        } catch {
            _ = await process.terminate()
            throw error
        }
        #expect(await Castline.interrupt(process) == 0, "\(process.standardError)")
    }

    /// When the stats stage's sample in a status was taken (its `ts`, in seconds since 1970).
    static func sampleTime(_ status: [String: Any]) -> Double? {
        let format = ISO8601DateFormatter()
        format.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        let sample = (status["stats"] as? [[String: Any]])?.first { $0["stream"] is String && $0["position_s"] is Double }
        return (sample?["ts"] as? String).flatMap(format.date(from:))?.timeIntervalSince1970
    }

    /// Wall clock less position less delay, from a status: constant while it plays on.
    static func playingOffset(_ status: [String: Any]) -> Double? {
        guard let time = sampleTime(status), let position = status["position_s"] as? Double,
              let delay = status["delay_s"] as? Double else { return nil }
        return time - position - delay
    }

    @Test("status, events, delay, pause/resume, pipeline, metrics, a refused swap and bad requests")
    func endpoints() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("control.yaml", Self.delayedTone)
        try await Self.withControl(["run", file]) { api, process in
            let status = try await api.status { ($0["state"] as? String) == "playing" && (($0["stats"] as? [Any])?.count ?? 0) >= 2 }
            #expect(status["pipeline"] as? String == "control-e2e")
            #expect(status["state"] as? String == "playing", "\(status)")
            #expect(status["position_s"] is Double, "\(status)")
            let stats = try #require(status["stats"] as? [[String: Any]])
            #expect(stats.contains { $0["stage"] as? String == "meter" && $0["stream"] as? String == "audio" && $0["bytes"] is Double })

            let events = try await api.events(count: 3)
            #expect(events.count == 3)
            #expect(events.allSatisfy { $0["pipeline"] as? String == "control-e2e" && $0["event"] is String && $0["ts"] is String })

            // Some history first: the delay is clamped to what the stage holds.
            _ = try await api.status(until: { ($0["available_delay_s"] as? Double ?? 0) >= 2.5 })
            let set = try await api.post("/delay", json: #"{"seconds": 1}"#)
            #expect(set.status == 200, "\(set.text)")
            #expect(abs((set.json?["delay_s"] as? Double ?? -1) - 1) < 0.05, "\(set.text)")
            let stepped = try await api.post("/delay", json: #"{"step": 1}"#)
            #expect(stepped.status == 200, "\(stepped.text)")
            #expect(abs((stepped.json?["delay_s"] as? Double ?? -1) - 2) < 0.05, "\(stepped.text)")
            // The reply's position is where the move took play: wall clock less position less delay is
            // what later samples read (a sample from before the move would be a second off).
            let replied = try #require(Self.playingOffset(stepped.json ?? [:]), "\(stepped.text)")
            let later = try await api.status(until: { Self.sampleTime($0) != Self.sampleTime(stepped.json ?? [:]) })
            let settled = try #require(Self.playingOffset(later), "\(later)")
            #expect(abs(replied - settled) < 0.1, "the reply's position is \(replied - settled) s off what plays")

            let paused = try await api.post("/pause", json: "")
            #expect(paused.status == 200 && paused.json?["state"] as? String == "paused", "\(paused.text)")
            #expect(try await api.get("/status").json?["state"] as? String == "paused")
            let resumed = try await api.post("/resume", json: "")
            #expect(resumed.status == 200 && resumed.json?["state"] as? String == "playing", "\(resumed.text)")
            // The pause is kept in the delay: 2 s and however long the pause took.
            let afterPause = try #require(resumed.json?["delay_s"] as? Double, "\(resumed.text)")
            #expect(afterPause > 2 && afterPause < 3, "\(resumed.text)")

            let pipeline = try await api.get("/pipeline")
            #expect(pipeline.status == 200 && pipeline.contentType.hasPrefix("application/yaml"))
            #expect(pipeline.text.contains("name: control-e2e") && pipeline.text.contains("- delay:"), "\(pipeline.text)")

            let metrics = try await api.get("/metrics")
            #expect(metrics.status == 200 && metrics.contentType.hasPrefix("text/plain"))
            #expect(metrics.text.contains(#"castline_bytes_total{pipeline="control-e2e",stage="meter",stream="audio"}"#), "\(metrics.text)")

            // An invalid pipeline is refused with its errors; the running one plays on.
            let refused = try await api.request("POST", "/swap?origin=broken.yaml", body: "version: 1\nsource:\n  test: { audio: { tone: loud } }\nsinks: [ { null: {} } ]\n",
                                                contentType: "application/yaml")
            #expect(refused.status == 422, "\(refused.text)")
            let lines = refused.json?["errors"] as? [String] ?? []
            #expect(lines.contains { $0.hasPrefix("broken.yaml:3:") && $0.contains("tone") }, "\(refused.text)")
            #expect(try await api.get("/status").json?["state"] as? String == "playing")
            #expect(process.isRunning)

            for (reply, status) in [
                (try await api.post("/delay", json: "{not json"), 400),
                (try await api.post("/delay", json: #"{"seconds": "soon"}"#), 400),
                (try await api.post("/swap", json: "{not json"), 400),
                (try await api.get("/nowhere"), 404),
                (try await api.get("/status?pipeline=other"), 404),
                (try await api.get("/delay"), 405),
            ] {
                #expect(reply.status == status, "\(reply.text)")
                #expect(reply.json?["error"] is String, "\(reply.text)")
            }

            // `castline ctl` against the same API.
            let ctlStatus = try await Castline.run(["ctl", "status", "--control", "127.0.0.1:\(api.port)"])
            #expect(ctlStatus.status == 0, "\(ctlStatus.stderr)")
            let printed = try JSONSerialization.jsonObject(with: Data(ctlStatus.stdout.utf8)) as? [String: Any]
            #expect(printed?["pipeline"] as? String == "control-e2e", "\(ctlStatus.stdout)")
            _ = try await api.status(until: { ($0["available_delay_s"] as? Double ?? 0) >= 3.5 })
            for (change, expected) in [("+1", afterPause + 1), ("-1", afterPause)] {
                let ctlDelay = try await Castline.run(["ctl", "delay", change, "--control", "127.0.0.1:\(api.port)"])
                #expect(ctlDelay.status == 0, "\(ctlDelay.stderr)")
                let reply = try JSONSerialization.jsonObject(with: Data(ctlDelay.stdout.utf8)) as? [String: Any]
                #expect(abs((reply?["delay_s"] as? Double ?? -1) - expected) < 0.05, "\(ctlDelay.stdout)")
            }
        }
    }

    @Test("castline ctl: pause, resume, pipeline, events, swap by path and inline; a taken port is refused at start")
    func ctl() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("control.yaml", Self.delayedTone)
        let broken = try scratch.write("broken.yaml", "version: 1\nname: control-e2e\nsource:\n  test: { audio: { tone: loud } }\nsinks: [ { null: {} } ]\n")
        let other = try scratch.write("other.yaml", Self.delayedTone.replacingOccurrences(of: "tone: 440", with: "tone: 880"))
        try await Self.withControl(["run", file]) { api, process in
            _ = try await api.status { $0["state"] as? String == "playing" }
            func ctl(_ arguments: [String]) async throws -> Castline.Result {
                try await Castline.run(["ctl"] + arguments + ["--control", "127.0.0.1:\(api.port)"])
            }
            func state(_ result: Castline.Result) -> String? {
                ((try? JSONSerialization.jsonObject(with: Data(result.stdout.utf8))) as? [String: Any])?["state"] as? String
            }
            let paused = try await ctl(["pause"])
            #expect(paused.status == 0 && state(paused) == "paused", "\(paused.stdout)\(paused.stderr)")
            let resumed = try await ctl(["resume", "--pipeline", "control-e2e"])
            #expect(resumed.status == 0 && state(resumed) == "playing", "\(resumed.stdout)\(resumed.stderr)")
            let unknown = try await ctl(["status", "--pipeline", "nope"])
            #expect(unknown.status == 1 && unknown.stderr.hasPrefix("HTTP 404: no pipeline \"nope\""), "\(unknown.stderr)")

            let pipeline = try await ctl(["pipeline"])
            #expect(pipeline.status == 0 && pipeline.stdout.hasPrefix("version: 1\nname: control-e2e\n"), "\(pipeline.stdout)")

            let events = try Castline.start(["ctl", "events", "--control", "127.0.0.1:\(api.port)"])
            let deadline = ContinuousClock.now + .seconds(10)
            while events.standardOutput.split(separator: "\n").count < 3, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            _ = await events.terminate()
            let lines = events.standardOutput.split(separator: "\n").prefix(3)
            #expect(lines.count == 3, "\(events.standardOutput)\(events.standardError)")
            for line in lines {
                let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
                #expect(object?["pipeline"] as? String == "control-e2e", "\(line)")
            }
            // Read by something that stops reading (`| head -1`): it ends, rather than streaming into nothing for the whole run.
            let headed = try await ChildProcess.run("/bin/bash", ["-c", "\"\(Castline.executable)\" ctl events --control 127.0.0.1:\(api.port) | head -1"],
                                                    timeout: .seconds(20))
            #expect(headed.status == 0 && headed.stdout.contains("control-e2e"), "\(headed.stdout)\(headed.stderr)")

            // A file that does not validate, sent inline: its errors under its own name, exit 1.
            let refused = try await ctl(["swap", broken, "--inline"])
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("HTTP 422: broken.yaml not applied"), "\(refused.stderr)")
            #expect(refused.stderr.contains("  broken.yaml:4:"), "\(refused.stderr)")
            // A valid file by path reaches the runner's swap, which either applies it or says why not.
            let swapped = try await ctl(["swap", other])
            let reply = (try? JSONSerialization.jsonObject(with: Data(swapped.stdout.utf8))) as? [String: Any]
            #expect((swapped.status == 0 && reply?["changes"] is [String] && reply?["took_ms"] is Int)
                    || (swapped.status == 1 && swapped.stderr.hasPrefix("HTTP 422: \(other) not applied")),
                    "\(swapped.stdout)\(swapped.stderr)")
            #expect(try await api.get("/status").json?["state"] as? String == "playing")

            let taken = try await Castline.run(["run", file, "--control", "127.0.0.1:\(api.port)"], timeout: .seconds(10))
            #expect(taken.status == 2 && taken.stderr.contains("--control: cannot listen on 127.0.0.1:\(api.port): address already in use (pick another port"),
                    "\(taken.stderr)")
            #expect(!taken.stderr.contains("descriptor") && !taken.stderr.contains("errno"), "NIO's call is not the user's business: \(taken.stderr)")
            #expect(process.isRunning)
        }
    }

    @Test("ctl with nothing listening: one line naming the address, exit 1")
    func ctlWithoutServer() async throws {
        let port = try FreePort.find()
        let result = try await Castline.run(["ctl", "status"], environment: ["CASTLINE_CONTROL": "127.0.0.1:\(port)"])
        #expect(result.status == 1)
        #expect(result.stderr == "no castline control API at 127.0.0.1:\(port); start castline with --control 127.0.0.1:\(port)\n",
                "\(result.stderr)")
        // --control before the subcommand as well as after it; after wins.
        let other = try FreePort.find()
        for arguments in [["ctl", "--control", "127.0.0.1:\(port)", "status"],
                          ["ctl", "--control", "127.0.0.1:\(other)", "delay", "--control", "127.0.0.1:\(port)", "+1"]] {
            let placed = try await Castline.run(arguments)
            #expect(placed.status == 1)
            #expect(placed.stderr.hasPrefix("no castline control API at 127.0.0.1:\(port);"), "\(arguments): \(placed.stderr)")
        }
    }

    @Test("a bind beyond loopback without a token is refused before anything runs")
    func nonLoopbackNeedsToken() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("control.yaml", Self.delayedTone)
        let port = try FreePort.find()
        let result = try await Castline.run(["run", file, "--control", "0.0.0.0:\(port)"], timeout: .seconds(10))
        #expect(result.status == 64)
        let first = result.stderr.split(separator: "\n").first.map(String.init) ?? ""
        #expect(first.contains("--control 0.0.0.0:\(port)") && first.contains("--control-token-env"), "\(result.stderr)")
        #expect(!result.stderr.contains("playing"))
    }

    @Test("--control and --metrics on one port: refused before anything runs, naming the clash (not a port in use)")
    func controlAndMetricsOnOnePort() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("control.yaml", Self.delayedTone)
        let port = try FreePort.find()
        let result = try await Castline.run(["run", file, "--control", "127.0.0.1:\(port)", "--metrics", "127.0.0.1:\(port)"],
                                            timeout: .seconds(10))
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--control and --metrics both ask for port \(port)"), "\(result.stderr)")
        #expect(!result.stderr.contains("playing"))
    }

    @Test("with a token, a request without it or with a wrong one is 401; the right one is served")
    func token() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("control.yaml", Self.delayedTone)
        let token = "tok-\(UUID().uuidString)"
        try await Self.withControl(["run", file, "--control-token-env", "CASTLINE_TEST_TOKEN", "--stats-json", "-"],
                                   environment: ["CASTLINE_TEST_TOKEN": token], bind: "0.0.0.0") { api, process in
            let missing = try await api.get("/status")
            #expect(missing.status == 401 && missing.json?["error"] is String, "\(missing.text)")
            let wrong = try await api.request("GET", "/status", authorization: "Bearer not-\(token)")
            #expect(wrong.status == 401 && (wrong.json?["error"] as? String)?.hasPrefix("the control token does not match") == true
                    && (missing.json?["error"] as? String)?.hasPrefix("a control token is required") == true, "\(wrong.text)")
            let right = try await api.request("GET", "/status", authorization: "Bearer \(token)")
            #expect(right.status == 200 && right.json?["pipeline"] as? String == "control-e2e", "\(right.text)")

            let ctl = try await Castline.run(["ctl", "status", "--control", "127.0.0.1:\(api.port)", "--token-env", "CASTLINE_TEST_TOKEN"],
                                             environment: ["CASTLINE_TEST_TOKEN": token])
            #expect(ctl.status == 0, "\(ctl.stderr)")
            let refused = try await Castline.run(["ctl", "status", "--control", "127.0.0.1:\(api.port)"])
            #expect(refused.status == 1 && refused.stderr.hasPrefix("HTTP 401:"), "\(refused.stderr)")
            #expect(!process.standardError.contains(token) && !process.standardOutput.contains(token))
        }
    }

    @Test("GET /pipeline masks the stream key; /metrics without a stats stage says how to turn stats on")
    func pipelineMasksSecrets() async throws {
        let key = "ctl-secret-\(UUID().uuidString.prefix(8))"
        try await withIngest { _, endpoints in
            let scratch = try Scratch()
            let file = try scratch.write("publish.yaml", """
                version: 1
                name: control-publish
                source:
                  test:
                    audio: { tone: 440 }
                stages:
                  - encode: { audio: { codec: aac, bitrate: 128k } }
                sinks:
                  - rtmp: { url: "\(endpoints.rtmpURL)", key: "\(key)" }
                """)
            try await Self.withControl(["run", file]) { api, process in
                _ = try await api.status { $0["state"] as? String == "playing" }
                let pipeline = try await api.get("/pipeline")
                #expect(pipeline.status == 200)
                #expect(pipeline.text.contains("key: '****'") || pipeline.text.contains("key: \"****\"") || pipeline.text.contains("key: ****"),
                        "\(pipeline.text)")
                #expect(!pipeline.text.contains(key), "\(pipeline.text)")
                // Sent back as shown (the page's Apply of an unedited file): refused, the publish goes on.
                let back = try await api.request("POST", "/swap", body: pipeline.text, contentType: "application/yaml")
                #expect(back.status == 422 && back.text.contains("a secret in it is ****"), "\(back.text)")
                let metrics = try await api.get("/metrics")
                #expect(metrics.status == 404, "\(metrics.text)")
                #expect((metrics.json?["error"] as? String)?.contains("stats") == true, "\(metrics.text)")
                #expect(!process.standardError.contains(key))
                // Stopped once nginx took the stream: a publish stopped before that has published nothing (exit 1).
                #expect(await Castline.waitFor("publishing", in: process, timeout: .seconds(15)), "\(process.standardError)")
            }
        }
    }
}
