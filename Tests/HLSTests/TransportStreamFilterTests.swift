import Foundation
import Testing
@testable import HLS

/// Dropping the streams nobody wants from MPEG-TS before the demuxer: real TS made by
/// ffmpeg, filtered, then read back by castline's head reader and by ffprobe.
@Suite struct TransportStreamFilterTests {
    private static let muxed: Data = {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-filter-\(UUID().uuidString).ts").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        _ = run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                    "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "2",
                                    "-c:v", "libx264", "-c:a", "aac", "-f", "mpegts", path])
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            Issue.record("fixture \(path) could not be read: \(error)")
            return Data()
        }
    }()

    @discardableResult
    private static func run(_ tool: String, _ arguments: [String]) -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = out
        guard (try? process.run()) != nil else { return "" }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    /// `bytes` fed through a filter keeping `kinds`, in chunks of `size`.
    static func filtered(_ bytes: Data, keeping kinds: Set<MediaKind>, chunk size: Int) -> Data {
        var filter = TransportStreamFilter(keeping: kinds)
        var out = Data()
        var at = bytes.startIndex
        while at < bytes.endIndex {
            let end = min(at + size, bytes.endIndex)
            out.append(filter.filter(bytes[at..<end]))
            at = end
        }
        return out
    }

    @Test func crcIsMPEG2() {
        // CRC-32/MPEG-2's check value.
        #expect(TransportStreamFilter.crc32(Array("123456789".utf8)) == 0x0376_E6E7)
    }

    @Test func audioOnlyKeepsTheAudioWhole() throws {
        let muxed = Self.muxed
        try #require(muxed.count > 100_000, "ffmpeg could not make the stream")
        let audio = Self.filtered(muxed, keeping: [.audio], chunk: 16_384)
        // Video is most of the bytes; what is left is whole packets.
        #expect(audio.count < muxed.count / 2)
        #expect(audio.count % 188 == 0)
        let before = try #require(TransportStreamHead.read([UInt8](muxed)))
        let after = try #require(TransportStreamHead.read([UInt8](audio)))
        #expect(after.streams == [.audio: "aac"])
        #expect(after.firstPTS == [.audio: try #require(before.firstPTS[.audio])])

        // ffprobe (which checks the program map's CRC) sees the audio alone, every packet of it.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-filtered-\(UUID().uuidString).ts")
        defer { try? FileManager.default.removeItem(at: path) }
        try audio.write(to: path)
        let source = path.deletingLastPathComponent().appendingPathComponent("castline-muxed-\(UUID().uuidString).ts")
        defer { try? FileManager.default.removeItem(at: source) }
        try muxed.write(to: source)
        func probe(_ file: URL) -> [String] {
            Self.run("/usr/bin/ffprobe", ["-v", "error", "-show_entries", "stream=codec_type,nb_read_packets", "-count_packets",
                                          "-of", "csv=p=0", file.path]).split(separator: "\n").map(String.init).filter { !$0.isEmpty }
        }
        // (ffprobe lists each stream under its program as well: counted once.)
        #expect(Set(probe(source)) == ["audio,95", "video,60"])
        #expect(Set(probe(path)) == ["audio,95"])
    }

    @Test func chunkingDoesNotMatter() throws {
        let muxed = Self.muxed.prefix(300 * 188 + 77)
        let whole = Self.filtered(muxed, keeping: [.audio], chunk: muxed.count)
        for size in [1, 187, 188, 189, 4096] {
            #expect(Self.filtered(muxed, keeping: [.audio], chunk: size) == whole, "chunks of \(size)")
        }
    }

    @Test func keepingEverythingChangesNothing() throws {
        let muxed = Self.muxed
        #expect(Self.filtered(muxed, keeping: [.audio, .video], chunk: 10_000) == muxed)
    }

    @Test func bytesOffThePacketGridAreSkipped() throws {
        var noisy = Data([0x00, 0x47, 0x12, 0xFF])
        noisy.append(Self.muxed.prefix(100 * 188))
        let clean = Self.filtered(Self.muxed.prefix(100 * 188), keeping: [.audio], chunk: 1000)
        #expect(Self.filtered(noisy, keeping: [.audio], chunk: 1000) == clean)
    }
}
