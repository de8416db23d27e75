/// Packed audio segments (RFC 8216 §3.4): an audio elementary stream (ADTS AAC, MP3, AC-3,
/// E-AC-3), each segment opening with an ID3 tag whose PRIV frame
/// `com.apple.streaming.transportStreamTimestamp` holds the MPEG-2 timestamp (90 kHz, 33 bits)
/// of its first sample. What a segment holds is told by its bytes, not its name: ffmpeg's HLS
/// muxer writes MPEG-TS into files named `.aac` when asked to.
public enum PackedAudio {
    public enum Codec: String, Sendable, Hashable {
        case aac, mp3, ac3, eac3
    }

    /// What a segment's first bytes are.
    public enum Container: Equatable, Sendable {
        case transportStream
        case packed(Codec)
    }

    /// The ID3 tag a segment may open with, read as far as the bytes so far allow.
    public enum Tag: Equatable, Sendable {
        /// The bytes do not start with an ID3 tag.
        case none
        /// They start with one that is not whole yet.
        case incomplete
        /// A whole tag of `length` bytes, and the transport stream timestamp it carries, if any.
        case whole(length: Int, timestamp: UInt64?)
    }

    /// An ID3 tag larger than this is not a packed audio segment's header: the bytes are read as they are.
    static let largestTag = 1 << 20

    /// MPEG-TS, packed audio of a codec, or nil when the bytes are neither (an error page, garbage).
    /// Needs the first few hundred bytes; an ID3 tag is looked past.
    public static func sniff(_ bytes: [UInt8]) -> Container? {
        if bytes.first == 0x47, bytes.count < 189 || bytes[188] == 0x47 { return .transportStream }
        var start = 0
        if case .whole(let length, _) = tag(bytes) { start = length }
        guard bytes.count >= start + 6 else { return nil }
        let (b0, b1) = (bytes[start], bytes[start + 1])
        if b0 == 0x0B, b1 == 0x77 {
            // bsid (the top five bits of the sixth byte) above 10 is E-AC-3.
            return .packed(bytes[start + 5] >> 3 > 10 ? .eac3 : .ac3)
        }
        guard b0 == 0xFF, b1 & 0xE0 == 0xE0 else { return nil }
        // Layer bits 00 are ADTS (AAC); any other layer is MPEG audio (MP3 and its kin).
        return .packed(b1 & 0x06 == 0 ? .aac : .mp3)
    }

    /// The ID3v2 tags at the start of `bytes`, read as one: their length together, and the first
    /// transport stream timestamp among them (an MP3 encoder's own tag may follow Apple's).
    public static func tag(_ bytes: [UInt8]) -> Tag {
        var length = 0
        var timestamp: UInt64?
        while true {
            switch singleTag(Array(bytes[length...])) {
            case .none: return length == 0 ? .none : .whole(length: length, timestamp: timestamp)
            case .incomplete: return .incomplete
            case .whole(let more, let found):
                length += more
                timestamp = timestamp ?? found
                guard length <= largestTag else { return .none }
            }
        }
    }

    /// One ID3v2 tag at the start of `bytes`.
    private static func singleTag(_ bytes: [UInt8]) -> Tag {
        let magic: [UInt8] = [0x49, 0x44, 0x33]  // "ID3"
        guard bytes.count >= 3 else { return bytes.elementsEqual(magic.prefix(bytes.count)) && !bytes.isEmpty ? .incomplete : .none }
        guard bytes[0..<3].elementsEqual(magic) else { return .none }
        guard bytes.count >= 10 else { return .incomplete }
        let version = bytes[3]
        let footer = bytes[5] & 0x10 != 0 ? 10 : 0
        guard let size = syncsafe(bytes[6..<10]) else { return .none }
        let length = 10 + size + footer
        guard length <= largestTag else { return .none }
        guard bytes.count >= length else { return .incomplete }
        return .whole(length: length, timestamp: timestamp(in: bytes[10..<10 + size], version: version))
    }

    /// The PRIV frame `com.apple.streaming.transportStreamTimestamp`'s 33-bit timestamp among a tag's frames.
    static func timestamp(in frames: ArraySlice<UInt8>, version: UInt8) -> UInt64? {
        let owner = Array("com.apple.streaming.transportStreamTimestamp".utf8) + [0]
        var at = frames.startIndex
        while at + 10 <= frames.endIndex {
            let id = frames[at..<at + 4]
            guard id.first != 0 else { return nil }  // padding
            let sizeBytes = frames[at + 4..<at + 8]
            // ID3v2.4 frame sizes are syncsafe; v2.3's are plain.
            let size = version >= 4 ? syncsafe(sizeBytes) : sizeBytes.reduce(0) { $0 << 8 | Int($1) }
            guard let size, at + 10 + size <= frames.endIndex else { return nil }
            let body = frames[at + 10..<at + 10 + size]
            if id.elementsEqual("PRIV".utf8), body.starts(with: owner), body.count >= owner.count + 8 {
                let value = body.dropFirst(owner.count).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                return value & ((1 << 33) - 1)
            }
            at += 10 + size
        }
        return nil
    }

    /// Four 7-bit bytes, most significant first; nil when a byte has its top bit set.
    private static func syncsafe(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard bytes.allSatisfy({ $0 & 0x80 == 0 }) else { return nil }
        return bytes.reduce(0) { $0 << 7 | Int($1) }
    }
}
