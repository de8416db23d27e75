import Foundation
import LocalIngest
import Testing

/// `castline run FILE --watch` against the real ingest: the pipeline file is edited
/// while castline publishes over RTMPS, and what nginx wrote is judged with ffprobe.
@Suite("Swapping by editing the file, end to end", .serialized, .timeLimit(.minutes(3)))
struct SwapEndToEndTests {
    static let key = "sw4p-\(UInt32.random(in: 100_000...999_999))-key"

    /// Writes `text` as an editor that saves by renaming a new file over the old one does.
    static func save(_ text: String, to path: String) throws {
        let temporary = path + ".~new"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw ProbeError(message: "rename failed: \(errno)") }
    }

    static func broadcast(source: String, endpoints: IngestEndpoints) -> String {
        """
        version: 1
        name: swapped
        source: \(source)
        stages: [ { encode: { video: {}, audio: {} } } ]
        sinks:
          - rtmp: { url: "\(endpoints.rtmpsURL)", key: "${CASTLINE_TEST_KEY}", ca-file: "\(endpoints.caFile)" }
        """
    }

    @Test("test pattern → a file over RTMPS: one publish for the whole run, HLS without a discontinuity or a gap")
    func sourceSwapKeepsThePublish() async throws {
        try await withIngest { _, endpoints in
            let scratch = try Scratch()
            let clip = scratch.file("clip.mp4")
            let made = try await ChildProcess.run("/usr/bin/ffmpeg", [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "25", "-c:v", "libx264", "-preset", "ultrafast",
                "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", clip,
            ])
            #expect(made.status == 0, "\(made.stderr)")
            let pipeline = try scratch.write("live.yaml", Self.broadcast(source: "{ test: {} }", endpoints: endpoints))
            let process = try Castline.start(["run", pipeline, "--watch"], environment: ["CASTLINE_TEST_KEY": Self.key])
            let hls = endpoints.published(key: Self.key)
            #expect(await hls.waitForSegments(2, timeout: .seconds(20)), "\(process.standardError)")
            // A typo first: refused, and the broadcast goes on.
            try Self.save("version: 1\nsource: { tset: {} }\n", to: pipeline)
            #expect(await Self.waitFor("not applied", in: process, timeout: .seconds(5)), "\(process.standardError)")
            try Self.save(Self.broadcast(source: "{ file: { path: \"\(clip)\" } }", endpoints: endpoints), to: pipeline)
            #expect(await Self.waitFor("reloaded", in: process, timeout: .seconds(10)), "\(process.standardError)")
            let before = hls.segments.count
            #expect(await hls.waitForSegments(before + 2, timeout: .seconds(20)), "no segments after the swap")
            let status = await Castline.interrupt(process)
            #expect(status == 0, "\(process.standardError)")
            #expect(!process.standardError.contains(Self.key))

            let playlist = try String(contentsOfFile: hls.directory + "/" + Self.key + ".m3u8", encoding: .utf8)
            // nginx-rtmp marks the first fragment of a publish; any other mark is a break in the stream.
            let marks = playlist.components(separatedBy: "#EXT-X-DISCONTINUITY").count - 1
            let leading = playlist.range(of: "#EXT-X-DISCONTINUITY").map { playlist[..<$0.lowerBound].contains("#EXTINF") == false } ?? false
            #expect(marks - (leading ? 1 : 0) == 0, "\(playlist)")
            let packets = try await hls.videoPackets().map(\.time).sorted()
            let gaps = zip(packets, packets.dropFirst()).map { $1 - $0 }
            #expect(packets.count > 150)
            let largest = gaps.indices.max { gaps[$0] < gaps[$1] }
            #expect((gaps.max() ?? 1) < 2.0 / 30,
                    "largest gap between frames \(gaps.max() ?? -1) s, after \(largest.map { packets[$0] } ?? -1) s of \(packets.last ?? -1) s")
            // nginx-rtmp writes one access-log line per RTMP session when it ends.
            let sessions = try String(contentsOfFile: endpoints.accessLogPath, encoding: .utf8)
                .split(separator: "\n").filter { $0.contains(Self.key) }
            #expect(sessions.count == 1, "\(sessions)")
        }
    }

    static func waitFor(_ text: String, in process: ChildProcess, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if process.standardError.contains(text) { return true }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return false
    }
}
