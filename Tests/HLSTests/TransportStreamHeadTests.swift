import Foundation
import Testing
@testable import HLS

/// The streams of an HLS segment and their first timestamps, read from its head: real MPEG-TS made by ffmpeg.
@Suite struct TransportStreamHeadTests {
    /// Half a second of MPEG-TS from ffmpeg with the given codec arguments.
    private func transportStream(_ codecs: [String]) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-probe-\(UUID().uuidString).ts").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "0.5"]
            + codecs + ["-f", "mpegts", path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0, "ffmpeg could not make the segment")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(TransportStreamHead.headBytes))
    }

    @Test(arguments: [
        (["-c:v", "libx264", "-c:a", "aac"], [MediaKind.video: String?.some("h264"), .audio: "aac"]),
        (["-vn", "-c:a", "aac"], [.audio: "aac"]),
        (["-an", "-c:v", "libx264"], [.video: "h264"]),
        (["-c:v", "libx265", "-x265-params", "log-level=error", "-c:a", "libmp3lame"], [.video: "h265", .audio: "mp3"]),
        // Known to be there, codec unknown to castline: decoded, never kept encoded.
        (["-c:v", "mpeg2video", "-c:a", "ac3"], [.video: String?.none, .audio: String?.none]),
        (["-vn", "-c:a", "libopus"], [.audio: "opus"]),
    ])
    func programMap(codecs: [String], expected: [MediaKind: String?]) throws {
        let head = try #require(TransportStreamHead.read(try transportStream(codecs)))
        #expect(head.streams == expected)
        // ffmpeg's MPEG-TS starts at 1.4 s (90 kHz ticks): every stream's first PES is read.
        #expect(Set(head.firstPTS.keys) == Set(expected.keys))
        for (kind, pts) in head.firstPTS {
            #expect((90_000...180_000).contains(pts), "\(kind) starts at \(Double(pts) / 90_000) s")
        }
    }

    @Test func notTransportStream() {
        #expect(TransportStreamHead.read(Array("<html><body>Not found</body></html>".utf8)) == nil)
        #expect(TransportStreamHead.read([]) == nil)
        // Sync bytes but no program map in the head.
        #expect(TransportStreamHead.read([UInt8](repeating: 0, count: 188 * 4).enumerated().map { $0.offset % 188 == 0 ? 0x47 : 0xFF }) == nil)
    }
}
