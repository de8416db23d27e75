import Foundation
import LocalIngest
import Testing

/// `castline run` with several files side by side, and `--watch`.
@Suite("run: several files, --watch", .serialized, .timeLimit(.minutes(3)))
struct RunFilesTests {
    static func tone(_ name: String, hz: Int = 440) -> String {
        """
        version: 1
        name: \(name)
        source:
          test:
            audio: { tone: \(hz) }
        stages:
          - stats: { every: 500ms }
        sinks:
          - null: {}
        """
    }

    @Test("two files run side by side, each under its own name, and both complete")
    func twoFiles() async throws {
        let scratch = try Scratch()
        let first = try scratch.write("a.yaml", Self.tone("tone-a"))
        let second = try scratch.write("b.yaml", Self.tone("tone-b", hz: 880))
        let run = try await Castline.run(["run", first, second, "--duration", "3s", "--stats-json", "-"])
        #expect(run.status == 0, "\(run.stderr)")
        let events = jsonLines(run.stdout)
        for name in ["tone-a", "tone-b"] {
            let own = events.filter { $0["pipeline"] as? String == name }
            #expect(own.contains { $0["event"] as? String == "stats" }, "no stats from \(name)")
            #expect(own.contains { $0["event"] as? String == "end-of-stream" }, "\(name) did not complete")
            #expect(run.stderr.contains("[\(name)] summary:"), "\(run.stderr)")
        }
    }

    @Test("of two files, one fails to start: the other completes, and the exit status is 1")
    func oneFails() async throws {
        let scratch = try Scratch()
        let good = try scratch.write("a.yaml", Self.tone("tone-a"))
        let bad = try scratch.write("b.yaml", """
            version: 1
            name: tone-b
            source:
              test:
                audio: { tone: 880 }
            sinks:
              - file: { path: /proc/no-such-folder/out.wav }
            """)
        let run = try await Castline.run(["run", good, bad, "--duration", "2s", "--stats-json", "-"])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("tone-b: sinks[0].file"), "\(run.stderr)")
        #expect(jsonLines(run.stdout).contains { $0["pipeline"] as? String == "tone-a" && $0["event"] as? String == "end-of-stream" })
    }

    @Test("two files under one control API: status of both, or of the one ?pipeline= names; Ctrl-C stops both")
    func twoFilesControlled() async throws {
        let scratch = try Scratch()
        let first = try scratch.write("a.yaml", Self.tone("tone-a"))
        let second = try scratch.write("b.yaml", Self.tone("tone-b", hz: 880))
        try await ControlAPITests.withControl(["run", first, second]) { api, process in
            let both = try await api.status {
                let states = ($0["pipelines"] as? [[String: Any]] ?? []).compactMap { $0["state"] as? String }
                return states == ["playing", "playing"]
            }
            let names = (both["pipelines"] as? [[String: Any]] ?? []).compactMap { $0["pipeline"] as? String }
            #expect(names == ["tone-a", "tone-b"], "\(both)")
            let one = try await api.get("/status?pipeline=tone-b")
            #expect(one.json?["pipeline"] as? String == "tone-b", "\(one.text)")
            let events = try await api.events("/events?pipeline=tone-a", count: 3)
            #expect(events.allSatisfy { $0["pipeline"] as? String == "tone-a" })
            let paused = try await api.post("/pause?pipeline=tone-a", json: "")
            #expect(paused.json?["state"] as? String == "paused", "\(paused.text)")
            let other = try await api.get("/status?pipeline=tone-b")
            #expect(other.json?["state"] as? String == "playing", "\(other.text)")
        }
    }

    @Test("two files naming the same pipeline: one line, exit 2, nothing runs")
    func sameName() async throws {
        let scratch = try Scratch()
        let first = try scratch.write("a.yaml", Self.tone("same"))
        let second = try scratch.write("b.yaml", Self.tone("same"))
        let run = try await Castline.run(["run", first, second, "--duration", "2s"])
        #expect(run.status == 2)
        #expect(run.stderr == "\(first) and \(second) both name their pipeline \"same\" (give each file its own name:)\n", "\(run.stderr)")
    }

    @Test("--watch: an invalid file renamed over the watched one is reported and the pipeline plays on; valid edits and SIGHUP reload")
    func watch() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("watched.yaml", Self.tone("watched"))
        let port = try FreePort.find()
        let process = try Castline.start(["run", file, "--watch", "--stats-json", "-", "--control", "127.0.0.1:\(port)"])
        defer { Task { _ = await process.terminate() } }
        let api = ControlHTTP(port: port)
        try #require(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(20)), "\(process.standardError)")
        _ = try await api.status { $0["state"] as? String == "playing" }

        /// The reload events so far (`reloaded` and `reload-failed`).
        func reloads() -> [[String: Any]] {
            jsonLines(process.standardOutput, growing: true).filter { ["reloaded", "reload-failed"].contains($0["event"] as? String ?? "") }
        }
        func waitForReloads(_ count: Int) async throws -> [[String: Any]] {
            let deadline = ContinuousClock.now + .seconds(5)
            while reloads().count < count, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            return reloads()
        }

        // As editors save: a new file renamed over the old one.
        func renameOver(_ text: String) throws {
            let temporary = scratch.file(".watched.yaml.swp")
            try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
            #expect(rename(temporary, file) == 0)
        }
        try renameOver("version: 1\nname: watched\nsource:\n  test:\n    audio: { tone: loud }\nsinks: [ { null: {} } ]\n")
        let afterInvalid = try await waitForReloads(1)
        let failed = try #require(afterInvalid.first, "no reload event: \(process.standardError)")
        #expect(failed["event"] as? String == "reload-failed")
        #expect((failed["message"] as? String)?.contains("\(file):5:") == true, "\(failed)")
        #expect(process.standardError.contains("not applied; the running pipeline is unchanged"), "\(process.standardError)")
        #expect(process.standardError.contains("source.test.audio.tone"), "\(process.standardError)")
        #expect(try await api.get("/status").json?["state"] as? String == "playing")
        #expect(process.isRunning)

        // A valid file renamed over it, then a write in place, then SIGHUP: each noticed once.
        try renameOver(Self.tone("watched", hz: 660))
        #expect(try await waitForReloads(2).count == 2)
        try Data(Self.tone("watched", hz: 770).utf8).write(to: URL(fileURLWithPath: file))
        #expect(try await waitForReloads(3).count == 3)
        process.signal(SIGHUP)
        #expect(try await waitForReloads(4).count == 4)
        try await Task.sleep(for: .milliseconds(300))
        #expect(reloads().count == 4, "one reload per change: \(reloads())")
        #expect(process.isRunning)
        #expect(try await api.get("/status").json?["state"] as? String == "playing")
        #expect(await Castline.interrupt(process) == 0, "\(process.standardError)")
    }
}
