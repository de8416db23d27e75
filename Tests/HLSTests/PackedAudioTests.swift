import Foundation
import Testing
@testable import HLS

/// Packed audio segments told by their bytes, and the ID3 timestamp they open with: real
/// elementary streams made by ffmpeg, and the ID3 tag Apple's tools write.
@Suite struct PackedAudioTests {
    /// Half a second of a tone from ffmpeg in `format`, with the given codec arguments.
    static func elementaryStream(_ codec: [String], format: String) throws -> [UInt8] {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-packed-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "0.5"]
            + codec + ["-f", format, path]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0, "ffmpeg could not make the \(format) stream")
        return [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }

    /// The ID3v2.4 tag RFC 8216 §3.4 describes (73 bytes): one PRIV frame holding the
    /// transport stream timestamp, eight bytes big-endian.
    static func timestampTag(_ timestamp: UInt64) -> [UInt8] {
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
        let body = owner + (0..<8).reversed().map { UInt8(truncatingIfNeeded: timestamp >> (8 * UInt64($0))) }
        let frame = Array("PRIV".utf8) + syncsafe(body.count) + [0, 0] + body
        return Array("ID3".utf8) + [4, 0, 0] + syncsafe(frame.count) + frame
    }

    static func syncsafe(_ value: Int) -> [UInt8] {
        [21, 14, 7, 0].map { UInt8((value >> $0) & 0x7F) }
    }

    @Test("each codec's elementary stream is told by its bytes, with or without an ID3 tag before it")
    func sniffsEachCodec() throws {
        let streams: [(PackedAudio.Codec, [String], String)] = [
            (.aac, ["-c:a", "aac"], "adts"),
            (.mp3, ["-c:a", "libmp3lame"], "mp3"),
            (.ac3, ["-c:a", "ac3"], "ac3"),
            (.eac3, ["-c:a", "eac3"], "eac3"),
        ]
        for (codec, arguments, format) in streams {
            let bytes = try Self.elementaryStream(arguments, format: format)
            #expect(PackedAudio.sniff(bytes) == .packed(codec), "\(format): \(bytes.prefix(8))")
            #expect(PackedAudio.sniff(Self.timestampTag(900_000) + bytes) == .packed(codec), "\(format) behind an ID3 tag")
        }
    }

    @Test("MPEG-TS is MPEG-TS whatever the file is called; an HTML page and garbage are neither")
    func sniffsTransportStreamAndRefusesTheRest() throws {
        let ts = try Self.elementaryStream(["-c:a", "aac"], format: "mpegts")
        #expect(PackedAudio.sniff(ts) == .transportStream)
        #expect(PackedAudio.sniff(Array("<!DOCTYPE html><html><body>no</body></html>".utf8)) == nil)
        #expect(PackedAudio.sniff([0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06]) == nil)
        #expect(PackedAudio.sniff([]) == nil)
    }

    @Test("the ID3 tag's transport stream timestamp, 33 bits; its length; a tag cut short is incomplete, no tag is none")
    func readsTheTimestampTag() throws {
        let tag = Self.timestampTag(0x1_2345_6789)
        #expect(tag.count == 73)
        let audio = try Self.elementaryStream(["-c:a", "aac"], format: "adts")
        #expect(PackedAudio.tag(tag + audio) == .whole(length: 73, timestamp: 0x1_2345_6789))
        // The top 31 of the 64 bits are not the timestamp's.
        #expect(PackedAudio.tag(Self.timestampTag(0xFFFF_FFFE_0000_0001)) == .whole(length: 73, timestamp: 1))
        for cut in [1, 3, 9, 10, 40, 72] {
            #expect(PackedAudio.tag(Array(tag.prefix(cut))) == .incomplete, "cut at \(cut)")
        }
        #expect(PackedAudio.tag(audio) == PackedAudio.Tag.none)
        #expect(PackedAudio.tag([]) == PackedAudio.Tag.none)
        // ffmpeg's MP3 opens with an ID3 tag of its own, with no timestamp in it.
        let mp3 = try Self.elementaryStream(["-c:a", "libmp3lame"], format: "mp3")
        guard case .whole(let length, nil) = PackedAudio.tag(mp3) else {
            Issue.record("no timestamp-less tag in ffmpeg's MP3: \(PackedAudio.tag(mp3))")
            return
        }
        #expect(length > 10 && length < mp3.count)
    }

    @Test("a tag that claims more than a megabyte is not taken for a header; a bad size byte is no tag")
    func refusesAbsurdTags() {
        #expect(PackedAudio.tag(Array("ID3".utf8) + [4, 0, 0] + Self.syncsafe(4 << 20) + [UInt8](repeating: 0, count: 64)) == PackedAudio.Tag.none)
        #expect(PackedAudio.tag(Array("ID3".utf8) + [4, 0, 0, 0x80, 0, 0, 0]) == PackedAudio.Tag.none)
    }
}

/// A live window that slides without EXT-X-MEDIA-SEQUENCE moving (ffmpeg's single_file) is
/// renumbered by the segments' URI and byte range.
@Suite struct RenumberingTests {
    static func playlist(sequence: Int, ranges: [Int]) throws -> MediaPlaylist {
        let uri = try #require(URL(string: "http://h/live.ts"))
        return MediaPlaylist(targetDuration: 1, mediaSequence: sequence, segments: ranges.enumerated().map {
            Segment(uri: uri, duration: 1, sequence: sequence + $0.offset, byteRange: ByteRange(offset: $0.element * 100, length: 100))
        })
    }

    @Test("slid by two under the same number: renumbered on; again next reload; an honest server's numbers are kept")
    func renumbers() throws {
        let first = try Self.playlist(sequence: 0, ranges: [0, 1, 2, 3])
        let slid = try Self.playlist(sequence: 0, ranges: [2, 3, 4, 5]).renumbered(after: first, declared: 0)
        #expect(slid.mediaSequence == 2 && slid.segments.map(\.sequence) == [2, 3, 4, 5])
        let again = try Self.playlist(sequence: 0, ranges: [3, 4, 5, 6]).renumbered(after: slid, declared: 0)
        #expect(again.mediaSequence == 3 && again.endSequence == 7)
        // Grown but not slid: numbered as before.
        let grown = try Self.playlist(sequence: 0, ranges: [3, 4, 5, 6, 7]).renumbered(after: again, declared: 0)
        #expect(grown.mediaSequence == 3)
        // An honest server moves its number: trusted as it is.
        let honest = try Self.playlist(sequence: 12, ranges: [12, 13]).renumbered(after: try Self.playlist(sequence: 10, ranges: [10, 11, 12]), declared: 10)
        #expect(honest.mediaSequence == 12)
        let unchanged = try Self.playlist(sequence: 10, ranges: [10, 11, 12])
        #expect(unchanged.renumbered(after: unchanged, declared: 10) == unchanged)
    }
}
