@testable import CastlineKit
import Testing

/// The FLV tags rtmp2sink is fed, byte for byte as Adobe's FLV spec 10.1 (E.4) lays them out.
@Suite("FLV tags for RTMP")
struct FLVTagWriterTests {
    static let avcC: [UInt8] = [1, 0x42, 0xC0, 0x1F, 0xFF, 0xE1, 0, 2, 0x67, 0x42]
    static let aacConfig: [UInt8] = [0x11, 0x90]

    static func unit(_ stream: StreamKind, ms dts: UInt64, pts: UInt64? = nil, key: Bool = true, config: [UInt8]?) -> FLVTagWriter.Unit {
        .init(stream: stream, dts: dts * 1_000_000, pts: (pts ?? dts) * 1_000_000, isKeyframe: key, config: config)
    }

    static func tags(_ writer: inout FLVTagWriter, _ unit: FLVTagWriter.Unit, _ payload: [UInt8]) -> [[UInt8]] {
        payload.withUnsafeBytes { writer.tags(for: unit, payload: $0, metadata: { .init(width: 1280, height: 720, framerate: 30, audioRate: 48000, audioChannels: 2) }) }
    }

    /// Type, body size, 24+8-bit timestamp: what rtmp2sink reads of a tag.
    static func header(_ tag: [UInt8]) -> (type: UInt8, size: Int, ms: UInt32) {
        (tag[0], Int(tag[1]) << 16 | Int(tag[2]) << 8 | Int(tag[3]),
         UInt32(tag[7]) << 24 | UInt32(tag[4]) << 16 | UInt32(tag[5]) << 8 | UInt32(tag[6]))
    }

    @Test("a connection starts at 0 with metadata, then each stream's configuration before its first frame")
    func startOfConnection() {
        var writer = FLVTagWriter()
        let first = Self.tags(&writer, Self.unit(.video, ms: 5_000, pts: 5_033, config: Self.avcC), [0, 0, 0, 1, 0x65])
        #expect(first.count == 3)
        #expect(Self.header(first[0]).type == 18 && Self.header(first[0]).ms == 0)
        #expect(first[0].count == 11 + Self.header(first[0]).size + 4)
        let meta = String(decoding: first[0], as: UTF8.self)
        #expect(meta.contains("onMetaData") && meta.contains("width") && meta.contains("audiosamplerate"))
        // The configuration: keyframe, AVC, packet type 0, then avcC.
        #expect(Array(first[1][11..<16]) == [0x17, 0, 0, 0, 0] && Array(first[1][16..<26]) == Self.avcC)
        // The frame: keyframe, packet type 1, composition time 33 ms, the NAL units; its size closes the tag.
        #expect(Array(first[2][11..<16]) == [0x17, 1, 0, 0, 33] && Array(first[2][16..<21]) == [0, 0, 0, 1, 0x65])
        #expect(Array(first[2].suffix(4)) == [0, 0, 0, 11 + 10])
        // Sound a little older than the keyframe the connection starts on is not sent.
        #expect(Self.tags(&writer, Self.unit(.audio, ms: 4_990, config: Self.aacConfig), [1, 2]).isEmpty)
        let audio = Self.tags(&writer, Self.unit(.audio, ms: 5_021, config: Self.aacConfig), [1, 2])
        #expect(audio.count == 2)
        #expect(Array(audio[0][11..<15]) == [0xAF, 0] + Self.aacConfig && Self.header(audio[0]).ms == 21)
        #expect(Array(audio[1][11..<15]) == [0xAF, 1, 1, 2] && Self.header(audio[1]).type == 8)
    }

    @Test("delta frames are marked inter; a changed configuration is sent again; times past 2^24 ms use the extended byte")
    func laterTags() {
        var writer = FLVTagWriter()
        _ = Self.tags(&writer, Self.unit(.video, ms: 0, config: Self.avcC), [9])
        let delta = Self.tags(&writer, Self.unit(.video, ms: 33, key: false, config: Self.avcC), [9])
        #expect(delta.count == 1 && delta[0][11] == 0x27 && Self.header(delta[0]).ms == 33)
        var changed = Self.avcC
        changed[3] = 0x28
        let again = Self.tags(&writer, Self.unit(.video, ms: 66, config: changed), [9])
        #expect(again.count == 2 && again[0][12] == 0 && Array(again[0][16...].prefix(changed.count)) == changed)
        let late = Self.tags(&writer, Self.unit(.video, ms: 0x0123_4567, key: false, config: changed), [9])
        #expect(Self.header(late[0]).ms == 0x0123_4567 && late[0][7] == 0x01)
        // Tags the output's queue may have dropped: the configuration goes again before what follows.
        writer.resendConfigurations()
        let resent = Self.tags(&writer, Self.unit(.video, ms: 0x0123_4600, config: changed), [9])
        #expect(resent.count == 2 && resent[0][12] == 0, "\(resent)")
    }
}
