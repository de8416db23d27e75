import Foundation
import LocalIngest
import Testing

/// `castline load` against an origin that misbehaves on purpose (Support/hostile_hls.py).
@Suite("castline load: simulated viewers of one HLS stream", .serialized, .timeLimit(.minutes(2)))
struct LoadTests {
    typealias Origin = HLSBadInputTests.HostileServer

    /// The last running totals a load wrote to stdout.
    private func lastTotals(_ stdout: String) -> [String: Any] {
        jsonLines(stdout).last { $0["event"] as? String == "load" } ?? [:]
    }

    @Test("a segment held back 8 s from every viewer: one stall per viewer, to the count, and the held fetch in p95; a clean stream: no stall")
    func stallsCounted() async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        // 20 viewers started within 0.2 s: all fetch the held segment (6 after the edge when the first asked).
        let held = try await Castline.run(["load", origin.url("stall.m3u8"), "--viewers", "20", "--ramp", "100/s", "--duration", "14s",
                                           "--stats-json", "-"], timeout: .seconds(60))
        #expect(held.status == 0, "\(held.stderr)")
        let totals = lastTotals(held.stdout)
        #expect(totals["viewers_started"] as? Double == 20 && totals["viewers_failed"] as? Double == 0, "\(totals)")
        #expect(totals["stalls"] as? Double == 20, "\(totals)")
        // Each stall lasts the 8 s hold less what the buffer held then (2 to 8 s of media).
        let stalled = totals["stall_s"] as? Double ?? 0
        #expect(stalled > 20 * 0.5 && stalled < 20 * 6.5, "stalled \(stalled) s in all")
        #expect((totals["fetch_p95_s"] as? Double ?? 0) > 7.9, "\(totals)")
        #expect((totals["ttff_p95_s"] as? Double ?? 9) < 1, "\(totals)")
        #expect(held.stderr.contains("summary: viewers 0 active, 20 started, 0 failed"), "\(held.stderr)")

        let clean = try await Castline.run(["load", origin.url("live.m3u8"), "--viewers", "10", "--ramp", "20/s", "--duration", "8s",
                                            "--stats-json", "-"], timeout: .seconds(60))
        #expect(clean.status == 0, "\(clean.stderr)")
        let calm = lastTotals(clean.stdout)
        #expect(calm["stalls"] as? Double == 0 && calm["http_errors"] as? Double == 0 && calm["viewers_active"] as? Double == 10, "\(calm)")
    }

    @Test("an origin with nothing there: every viewer failed, HTTP 404 counted, one line naming it, exit 1; a URL that is not HLS: exit 64")
    func failures() async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        let missing = try await Castline.run(["load", origin.url("nothing.m3u8"), "--viewers", "3", "--ramp", "50/s", "--duration", "1s",
                                              "--stats-json", "-"], timeout: .seconds(30))
        #expect(missing.status == 1, "\(missing.stderr)")
        #expect(missing.stderr.contains("error: every viewer failed: the server answered HTTP 404"), "\(missing.stderr)")
        let totals = lastTotals(missing.stdout)
        #expect(totals["viewers_failed"] as? Double == 3 && totals["http_errors_404"] as? Double == 3, "\(totals)")
        let rtmp = try await Castline.run(["load", "rtmp://127.0.0.1/live/key", "--viewers", "3"])
        #expect(rtmp.status == 64 && rtmp.stderr.contains("not an HLS URL castline loads"), "\(rtmp.stderr)")
    }
}
