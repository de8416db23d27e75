import Foundation
import LocalIngest
import Testing

/// `castline listen` in a real terminal (tmux, 80 columns): the status line is there,
/// fits, and the keys do what the line then says.
@Suite("listen in a terminal: status line and keys", .serialized, .timeLimit(.minutes(3)))
struct TerminalTests {
    /// A detached tmux session of 80x24 running `command`; the pane stays after it exits.
    final class Pane: Sendable {
        let name = "castline-\(UUID().uuidString.prefix(8))"

        init(_ command: [String]) async throws {
            let quoted = command.map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
            try await tmux(["new-session", "-d", "-s", name, "-x", "80", "-y", "24", "sh", "-c", quoted + "; sleep 60"])
        }

        func keys(_ keys: String) async throws { try await tmux(["send-keys", "-t", name, "-l", keys]) }

        /// The pane's text, wrapped lines joined: a line over 80 columns shows as one.
        func text() async throws -> String { try await tmux(["capture-pane", "-p", "-J", "-t", name]) }

        /// Waits until the pane shows `wanted` (polled: tmux has no event for it).
        func waitFor(_ wanted: String, timeout: Duration = .seconds(30)) async throws -> String {
            try await waitUntil("\"\(wanted)\"", timeout: timeout) { $0.contains(wanted) }
        }

        func waitUntil(_ what: String, timeout: Duration = .seconds(30), _ done: (String) -> Bool) async throws -> String {
            let deadline = ContinuousClock.now + timeout
            var last = ""
            while ContinuousClock.now < deadline {
                last = try await text()
                if done(last) { return last }
                try await Task.sleep(for: .milliseconds(200))
            }
            Issue.record("the pane never showed \(what):\n\(last)")
            return last
        }

        func close() async { _ = try? await tmux(["kill-session", "-t", name]) }

        @discardableResult
        private func tmux(_ arguments: [String]) async throws -> String {
            let result = try await ChildProcess.run("/usr/bin/tmux", arguments, timeout: .seconds(10))
            guard result.status == 0 else { throw ProbeError(message: "tmux \(arguments.first ?? ""): \(result.stderr)") }
            return result.stdout
        }
    }

    static func vod(seconds: Int) async throws -> (Scratch, HTTPFolder) {
        let scratch = try Scratch()
        try await HLSFixtures.vod("long", in: scratch.path, seconds: Double(seconds), video: false)
        return (scratch, try await HTTPFolder(scratch.path))
    }

    @Test("a status line on 80 columns with the delay and the audio; + and - move the delay; q quits")
    func statusLineAndKeys() async throws {
        let (scratch, server) = try await Self.vod(seconds: 40)
        defer { withExtendedLifetime(scratch) { Task { await server.stop() } } }
        // What castline said besides the screen, to tell a status line not drawn from figures not reported.
        let events = scratch.file("events.jsonl")
        let pane = try await Pane([Castline.executable, "listen", server.url("long.m3u8"), "--output", "null",
                                   "--delay", "1s", "--max-delay", "1m", "--stats-json", events])
        defer { Task { await pane.close() } }
        // The status line, not the delay-changed line before it.
        var shown = try await pane.waitFor("playing  ")
        #expect(shown.contains("audio") && shown.contains("kbit/s"), "\(shown)")
        for line in shown.split(separator: "\n") { #expect(line.count <= 80, "a line over 80 columns: \(line)") }
        // Some history first, so a move back has something to play.
        _ = try await pane.waitUntil("3 s available", timeout: .seconds(20)) { text in
            let held = text.split(separator: "\n").filter { $0.hasPrefix("playing  ") }.compactMap { line in
                line.range(of: #"/ [0-9.]+ s available"#, options: .regularExpression)
                    .flatMap { Double(line[$0].dropFirst(2).prefix { $0 != " " }) }
            }
            return (held.last ?? 0) >= 3
        }
        try await pane.keys("+")
        shown = try await pane.waitFor("delay 2.0 s /")
        try await pane.keys("-")
        shown = try await pane.waitFor("delay 1.0 s /")
        // Space pauses as a time-shift: the line says paused and the delay grows; again, it plays on from there.
        func last(_ text: String) -> (state: String, delay: Double)? {
            guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("playing  ") || $0.hasPrefix("paused  ") }),
                  let range = line.range(of: #"delay [0-9.]+ s"#, options: .regularExpression),
                  let delay = Double(line[range].dropFirst(6).dropLast(2)) else { return nil }
            return (String(line.prefix { $0 != " " }), delay)
        }
        try await pane.keys(" ")
        shown = try await pane.waitUntil("paused, the delay past 2.5 s", timeout: .seconds(10)) { text in
            last(text).map { $0.state == "paused" && $0.delay >= 2.5 } ?? false
        }
        try await pane.keys(" ")
        func playingAgain(_ text: String) -> Bool { last(text).map { $0.state == "playing" && $0.delay >= 2.5 } ?? false }
        shown = try await pane.waitUntil("playing again, the pause kept in the delay", timeout: .seconds(10), playingAgain)
        if !playingAgain(shown) {
            let said = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
            Issue.record("castline's last events (--stats-json):\n\(said.split(separator: "\n").suffix(25).joined(separator: "\n"))")
        }
        try await pane.keys("q")
        shown = try await pane.waitFor("stopped")
        for line in shown.split(separator: "\n") { #expect(line.count <= 80, "a line over 80 columns: \(line)") }
    }

    @Test("+ without a delay stage says once what to add")
    func keyWithoutItsStage() async throws {
        let (scratch, server) = try await Self.vod(seconds: 20)
        defer { withExtendedLifetime(scratch) { Task { await server.stop() } } }
        let pane = try await Pane([Castline.executable, "listen", server.url("long.m3u8"), "--output", "null"])
        defer { Task { await pane.close() } }
        _ = try await pane.waitFor("playing")
        try await pane.keys("+")
        try await pane.keys("+")
        let shown = try await pane.waitFor("no stage here takes it")
        #expect(shown.components(separatedBy: "no stage here takes it").count == 2, "said once:\n\(shown)")
        #expect(shown.contains("listen --delay"), "\(shown)")
        // On a line of its own: not written onto the end of the status line (which it then wrapped).
        #expect(shown.split(separator: "\n").contains { $0.hasPrefix("+ moves the delay") }, "\(shown)")
        try await pane.keys("q")
        _ = try await pane.waitFor("stopped")
    }

    @Test("monitor of two streams: one status line each at the bottom, with the loudness; an alarm's line above them; each alarm on its stream's line while raised")
    func monitorLines() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "30",
                                      "-af", "volume=enable='gte(t,3)':volume=0"] + HLSFixtures.codecs(video: false)
                                     + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "hush-%d.ts",
                                        "hush.m3u8"], in: scratch.path)
        try await HLSFixtures.vod("tone", in: scratch.path, seconds: 30, video: false)
        let server = try await HTTPFolder(scratch.path)
        defer { withExtendedLifetime(scratch) { Task { await server.stop() } } }
        let alarms = try scratch.write("alarms.yaml", "silence: { for: 1s }\n")
        let pane = try await Pane([Castline.executable, "monitor", server.url("hush.m3u8"), server.url("tone.m3u8"), "--alarms", alarms])
        defer { Task { await pane.close() } }
        let shown = try await pane.waitUntil("both lines, the silence raised") { text in
            text.contains("[hush] playing  ALARM silence (audio)") && text.contains("[tone] playing  ")
        }
        let lines = shown.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        #expect(lines.suffix(2).map { $0.prefix(7) } == ["[hush] ", "[tone] "], "the two status lines last, in order:\n\(shown)")
        #expect(lines.last?.contains("LUFS") == true, "\(shown)")
        let alarm = try #require(lines.firstIndex { $0.hasPrefix("[hush] alarm: silence on audio since") }, "\(shown)")
        #expect(alarm < lines.count - 2, "the alarm's own line above the status lines:\n\(shown)")
        #expect(lines.filter { $0.hasPrefix("[tone] playing  ") }.count == 1, "one status line for the tone, redrawn in place:\n\(shown)")
        for line in lines { #expect(line.count <= 80, "a line over 80 columns: \(line)") }
    }

    @Test("load: one progress block redrawn in place (not a scroll), every line within 80 columns, the live latency in it")
    func loadBlock() async throws {
        let scratch = try Scratch()
        let origin = try await HLSBadInputTests.HostileServer(scratch: scratch)
        defer { Task { await origin.stop() } }
        let pane = try await Pane([Castline.executable, "load", origin.url("live.m3u8"), "--viewers", "5", "--ramp", "10/s", "--duration", "4s"])
        defer { Task { await pane.close() } }
        let shown = try await pane.waitFor("summary: viewers 0 active, 5 started, 0 failed")
        let lines = shown.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
        let block = ["viewers  ", "first frame  ", "stalls  ", "live latency  ", "fetch  ", "http errors  ", "this process  "]
        for start in block {
            #expect(lines.filter { $0.hasPrefix(start) }.count == 1, "one '\(start)' line, redrawn in place:\n\(shown)")
        }
        #expect(lines.contains { $0.hasPrefix("viewers       5 active (5 playing, 0 stalled)   5 of 5 started   0 failed") }, "\(shown)")
        #expect(lines.contains { $0.hasPrefix("live latency  p50 ") }, "\(shown)")
        for line in lines where block.contains(where: line.hasPrefix) { #expect(line.count <= 80, "a line over 80 columns: \(line)") }
    }
}
