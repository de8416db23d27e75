import Foundation
import Testing
@testable import HLS

/// Every kept fuzz-corpus input (Fuzz/corpus) through the reader it was kept for, as the
/// fuzzer feeds it: `make check` runs them in seconds, without libFuzzer.
@Suite struct FuzzCorpusTests {
    static func corpus(_ name: String) throws -> [(name: String, bytes: Data)] {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/\(name)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        try #require(!files.isEmpty, "no corpus at \(folder.path)")
        return try files.map { ($0, try Data(contentsOf: folder.appendingPathComponent($0))) }
    }

    @Test("playlists: each parses or is refused, and what consumers compute from a parse does not trap")
    func playlists() throws {
        let bases = [try #require(URL(string: "http://127.0.0.1:8080/hls/stream.m3u8")), try #require(URL(string: "file:///srv/out.m3u8"))]
        var parsed = 0
        for (_, bytes) in try Self.corpus("playlist") {
            for base in bases {
                guard case .media(let media)? = try? PlaylistParser.parse(bytes, base: base) else { continue }
                parsed += 1
                _ = media.duration
                _ = media.endSequence
                for segment in media.segments { _ = segment.byteRange?.header; _ = segment.initSection?.byteRange?.header }
            }
        }
        #expect(parsed > 0)
    }

    @Test("segment bytes: the filter keeps whole packets in any chunking; heads, sniffing and ID3 tags read without trapping")
    func segments() throws {
        for (name, data) in try Self.corpus("transport-stream") {
            for chunk in [1, 187, 188, 4096] {
                let kept = TransportStreamFilterTests.filtered(data, keeping: [.audio], chunk: chunk)
                #expect(kept.count % 188 == 0, "\(name) in chunks of \(chunk)")
            }
            // As the fuzzer reads them: past the first byte, which picks its chunk size.
            let bytes = [UInt8](data.dropFirst())
            _ = TransportStreamHead.read(bytes)
            _ = PackedAudio.sniff(bytes)
            if case .whole(let length, _) = PackedAudio.tag(bytes) { #expect(length <= bytes.count, "\(name)") }
        }
    }
}
