import Foundation
import Testing
@testable import CastlineKit

/// The streams of an HLS segment, read from its head: real MPEG-TS made by ffmpeg.
@Suite struct SegmentProbeTests {
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
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)).prefix(SegmentProbe.headBytes))
    }

    @Test(arguments: [
        (["-c:v", "libx264", "-c:a", "aac"], [StreamKind.video: Codec?.some(.h264), .audio: .aac]),
        (["-vn", "-c:a", "aac"], [.audio: .aac]),
        (["-an", "-c:v", "libx264"], [.video: .h264]),
        (["-c:v", "libx265", "-x265-params", "log-level=error", "-c:a", "libmp3lame"], [.video: .h265, .audio: .mp3]),
        // Known to be there, codec unknown to castline: decoded, never kept encoded.
        (["-c:v", "mpeg2video", "-c:a", "ac3"], [.video: Codec?.none, .audio: Codec?.none]),
        (["-vn", "-c:a", "libopus"], [.audio: .opus]),
    ])
    func programMap(codecs: [String], expected: [StreamKind: Codec?]) throws {
        #expect(SegmentProbe.transportStreams(try transportStream(codecs)) == expected)
    }

    @Test func notTransportStream() {
        #expect(SegmentProbe.transportStreams(Array("<html><body>Not found</body></html>".utf8)) == nil)
        #expect(SegmentProbe.transportStreams([]) == nil)
        // Sync bytes but no program map in the head.
        #expect(SegmentProbe.transportStreams([UInt8](repeating: 0, count: 188 * 4).enumerated().map { $0.offset % 188 == 0 ? 0x47 : 0xFF }) == nil)
    }

    @Test func packedAudioByName() throws {
        let url = try #require(URL(string: "http://example.com/live/seg-12.aac?token=x"))
        #expect(SegmentProbe.packedAudio(named: url) == [.audio: .aac])
        #expect(SegmentProbe.packedAudio(named: try #require(URL(string: "http://example.com/a.ts"))) == nil)
    }

    @Test func fragmentedAndEncryptedSegmentsAreLeftToDiscovery() async throws {
        let base = try #require(URL(string: "http://127.0.0.1:9/live/index.m3u8"))
        for head in ["#EXT-X-MAP:URI=\"init.mp4\"", "#EXT-X-KEY:METHOD=AES-128,URI=\"key\""] {
            let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n\(head)\n#EXTINF:2.0,\nseg-1.m4s\n"
            guard case .media(let media) = try HLSPlaylist.parse(text, base: base) else {
                Issue.record("not a media playlist")
                continue
            }
            #expect(media.segmentURIs.map(\.absoluteString) == ["http://127.0.0.1:9/live/seg-1.m4s"])
            // Nothing is fetched (port 9 would refuse): the answer is nil at once.
            #expect(await SegmentProbe.streams(of: media) == nil)
        }
    }
}
