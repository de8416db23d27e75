import Foundation
import Testing

/// A stage's own runtime command through the generic interface: the `gain`
/// plugin (its folder and one registry line) is moved by `POST /gain` and
/// `castline ctl set gain`, and the sound after it moves by what it says.
@Suite("stage commands: a plugin's control", .serialized, .timeLimit(.minutes(2)))
struct StageControlTests {
    static let gainedTone = """
        version: 1
        name: gain-e2e
        source:
          test:
            audio: { tone: 440 }
        stages:
          - gain: { db: 0 }
          - stats: { every: 250ms, name: meter }
        sinks:
          - null: {}
        """

    /// The meter's latest audio level.
    static func level(_ status: [String: Any]) -> Double? {
        let stats = status["stats"] as? [[String: Any]] ?? []
        return stats.first { $0["stage"] as? String == "meter" && $0["stream"] as? String == "audio" }?["rms_dbfs"] as? Double
    }

    @Test("POST /gain and ctl set gain move the level the meter after it reads, by the dB they say")
    func gainMovesTheLevel() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("gain.yaml", Self.gainedTone)
        try await ControlAPITests.withControl(["run", file]) { api, _ in
            let before = try #require(Self.level(try await api.status { Self.level($0) != nil }))
            #expect((try await api.get("/status").json?["gain_db"] as? Double) == 0)

            let set = try await api.post("/gain", json: #"{"db": -12}"#)
            #expect(set.status == 200, "\(set.text)")
            #expect(set.json?["gain_db"] as? Double == -12, "\(set.text)")
            let quieter = try await api.status { abs((Self.level($0) ?? 0) - (before - 12)) < 0.5 }
            #expect(abs((Self.level(quieter) ?? 0) - (before - 12)) < 0.5, "before \(before) dBFS, after \(String(describing: Self.level(quieter)))")

            let stepped = try await Castline.run(["ctl", "set", "gain", "+2", "--control", "127.0.0.1:\(api.port)"])
            #expect(stepped.status == 0, "\(stepped.stderr)")
            let reply = try JSONSerialization.jsonObject(with: Data(stepped.stdout.utf8)) as? [String: Any]
            #expect(reply?["gain_db"] as? Double == -10, "\(stepped.stdout)")
            let louder = try await api.status { abs((Self.level($0) ?? 0) - (before - 10)) < 0.5 }
            #expect(abs((Self.level(louder) ?? 0) - (before - 10)) < 0.5, "\(louder)")

            for (reply, status) in [
                (try await api.post("/gain", json: #"{"db": 99}"#), 400),
                (try await api.post("/gain", json: #"{"seconds": 1}"#), 400),
                (try await api.post("/delay", json: #"{"seconds": 1}"#), 409),
                (try await api.post("/nowhere", json: "{}"), 404),
                (try await api.get("/gain"), 405),
            ] {
                #expect(reply.status == status, "\(reply.text)")
                #expect(reply.json?["error"] is String, "\(reply.text)")
            }
            let noDelay = try await api.post("/delay", json: #"{"seconds": 1}"#)
            #expect((noDelay.json?["error"] as? String)?.hasPrefix("pipeline \"gain-e2e\" has no stage that takes delay (") == true, "\(noDelay.text)")
            let unknown = try await Castline.run(["ctl", "set", "loudness", "+1", "--control", "127.0.0.1:\(api.port)"])
            #expect(unknown.status == 64 && unknown.stderr.contains("no stage takes \"loudness\""), "\(unknown.stderr)")
        }
    }
}

/// The delay's own rules, through its command: a request beyond the history is clamped,
/// and a step then moves from the delay in use, not from the request.
@Suite("delay command rules", .serialized, .timeLimit(.minutes(2)))
struct DelayCommandTests {
    @Test("delay 1000 s is clamped to what is held; -1 then moves from there; ctl delay 2 is 2 s")
    func clampedThenStepped() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("control.yaml", ControlAPITests.delayedTone)
        try await ControlAPITests.withControl(["run", file]) { api, _ in
            _ = try await api.status(until: { ($0["available_delay_s"] as? Double ?? 0) >= 4 })
            let far = try await api.post("/delay", json: #"{"seconds": 1000}"#)
            let clamped = try #require(far.json?["delay_s"] as? Double, "\(far.text)")
            let held = try #require(far.json?["available_delay_s"] as? Double, "\(far.text)")
            #expect(clamped <= held + 0.05 && clamped > 3, "\(far.text)")
            let nearer = try await api.post("/delay", json: #"{"step": -1}"#)
            let stepped = try #require(nearer.json?["delay_s"] as? Double, "\(nearer.text)")
            #expect(abs(stepped - (clamped - 1)) < 0.1, "from \(clamped) s, one step nearer: \(nearer.text)")

            let bare = try await Castline.run(["ctl", "delay", "2", "--control", "127.0.0.1:\(api.port)"])
            #expect(bare.status == 0, "\(bare.stderr)")
            let reply = try JSONSerialization.jsonObject(with: Data(bare.stdout.utf8)) as? [String: Any]
            #expect(abs((reply?["delay_s"] as? Double ?? -1) - 2) < 0.05, "\(bare.stdout)")
        }
    }

    @Test("""
    A live HLS stream, its segments arriving 2 s at a time: a delay moved back beyond what --max-delay holds plays on from \
    the oldest held, its sound heard (it stopped for good: each segment's arrival evicted what was about to play)
    """)
    func movedToTheOldestPlaysOn() async throws {
        let scratch = try Scratch()
        let server = try await HLSBadInputTests.HostileServer(scratch: scratch, run: true)
        defer { Task { await server.stop() } }
        try await ControlAPITests.withControl(["listen", server.url("run.m3u8"), "--audio-only", "--output", "null",
                                               "--delay", "2s", "--max-delay", "6s", "--stats-json", scratch.file("stats.jsonl")]) { api, process in
            func delayStage(_ status: [String: Any]) -> [String: Any]? {
                (status["stats"] as? [[String: Any]])?.first { ($0["stage"] as? String)?.hasPrefix("delay") == true }
            }
            func heard(_ status: [String: Any]) -> Bool {
                let sound = (status["stats"] as? [[String: Any]])?.first { $0["stream"] as? String == "audio" && $0["rms_dbfs"] != nil }
                return (sound?["rms_dbfs"] as? Double ?? -120) > -60
            }
            let full = try await api.status(until: { (delayStage($0)?["available_delay_s"] as? Double ?? 0) >= 5.9 && heard($0) },
                                            timeout: .seconds(20))
            try #require((delayStage(full)?["available_delay_s"] as? Double ?? 0) >= 5.9 && heard(full), "\(full) \(process.standardError)")
            let moved = try await api.post("/delay", json: #"{"seconds": 100}"#)
            let from = try #require(delayStage(moved.json ?? [:])?["position_s"] as? Double, "\(moved.text)")
            // Play-out goes on from there: its position moves on, and the sound is heard.
            let later = try await api.status(until: { (delayStage($0)?["position_s"] as? Double ?? 0) >= from + 5 && heard($0) },
                                             timeout: .seconds(12))
            let position = delayStage(later)?["position_s"] as? Double ?? 0
            #expect(position >= from + 5 && heard(later), "play-out at \(position) s after the move to \(from) s: \(later)")
        }
    }

    @Test("castline --version prints the version")
    func version() async throws {
        let result = try await Castline.run(["--version"])
        #expect(result.status == 0 && result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).range(of: #"^\d+\.\d+\.\d+$"#, options: .regularExpression) != nil,
                "\(result.stdout)")
    }
}
