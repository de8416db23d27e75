/// FLV tags as rtmp2sink takes them (an 11-byte header, the body, the 4-byte size of the tag),
/// written from the publisher's H.264 and AAC samples. Written here, not by flvmux: a flvmux per
/// destination (an aggregator with a thread of its own, and an appsrc per stream in front of it)
/// was most of what each further destination cost, and the format of RTMP's payloads is small
/// and fixed (Adobe's FLV spec 10.1, E.4).
///
/// One writer per connection: its tags start at 0, as flvmux's do; the codec configuration
/// goes before a stream's first tag and again when it changes; `onMetaData` goes first.
struct FLVTagWriter {
    enum TagType: UInt8 { case audio = 8, video = 9, script = 18 }

    /// One encoded unit: times in the publishing time line, the bytes as the encoder framed
    /// them (AVC: length-prefixed NAL units; AAC: a raw frame), its codec configuration
    /// (avcC, or AudioSpecificConfig) from the caps' `codec_data`.
    struct Unit {
        let stream: StreamKind
        let dts: UInt64
        let pts: UInt64
        let isKeyframe: Bool
        let config: [UInt8]?
    }

    /// What `onMetaData` says of the streams, from their caps.
    struct Metadata: Equatable {
        var width: Int?, height: Int?, framerate: Double?
        var audioRate: Int?, audioChannels: Int?
    }

    /// The configurations may not have reached the output (its queue dropped tags): each is
    /// sent again before its stream's next unit.
    mutating func resendConfigurations() { configs = [:] }

    /// Running time of this connection's first tag, in nanoseconds.
    private var start: UInt64?
    private var configs: [StreamKind: [UInt8]] = [:]

    /// The tags for `unit` (its configuration first where it is new, the metadata before the
    /// connection's first tag); none for a unit from before the connection's start (sound a
    /// little older than the keyframe it starts on).
    mutating func tags(for unit: Unit, payload: UnsafeRawBufferPointer, metadata: () -> Metadata) -> [[UInt8]] {
        var tags: [[UInt8]] = []
        if start == nil {
            start = unit.dts
            tags.append(Self.tag(.script, at: 0, body: Self.onMetaData(metadata())))
        }
        // A tag's size has 24 bits: a unit past 16 MiB cannot be carried (nor is any real frame that big).
        guard let start, unit.dts >= start, payload.count < 0xFF_FF00 else { return [] }
        let time = UInt32(truncatingIfNeeded: (unit.dts - start) / 1_000_000)
        if let config = unit.config, configs[unit.stream] != config {
            configs[unit.stream] = config
            tags.append(Self.tag(unit.stream == .video ? .video : .audio, at: time,
                                 body: Self.head(unit.stream, keyframe: true, configuration: true, compositionTime: 0) + config))
        }
        // Composition time: how far the picture's presentation is past its decoding, in ms, as the
        // difference of the two in whole ms (so decode time plus it is the presentation's ms).
        let presentation = unit.pts >= start ? Int64((unit.pts - start) / 1_000_000) : 0
        let composition = Int32(clamping: presentation - Int64(time))
        // The frame goes straight into its tag: one copy of it, not two.
        tags.append(Self.tag(unit.stream == .video ? .video : .audio, at: time,
                             body: Self.head(unit.stream, keyframe: unit.isKeyframe, configuration: false, compositionTime: max(0, composition)),
                             then: payload))
        return tags
    }

    /// The bytes before a unit in its tag's body: for AVC, frame type and codec id 7, packet
    /// type (0 configuration, 1 NAL units), composition time; for AAC, format 10 (whose rate,
    /// size and channel bits are fixed at 44 kHz, 16 bits, stereo: the configuration says the
    /// real ones), packet type (0 configuration, 1 a frame).
    static func head(_ stream: StreamKind, keyframe: Bool, configuration: Bool, compositionTime: Int32) -> [UInt8] {
        switch stream {
        case .video:
            let c = UInt32(bitPattern: compositionTime)
            return [(keyframe ? 0x10 : 0x20) | 7, configuration ? 0 : 1, UInt8(c >> 16 & 0xFF), UInt8(c >> 8 & 0xFF), UInt8(c & 0xFF)]
        case .audio:
            return [0xAF, configuration ? 0 : 1]
        }
    }

    /// A whole tag: header (type, body size, 24+8-bit timestamp in ms, stream id 0), body, and the tag's size.
    /// `then`: more of the body, after `body`.
    static func tag(_ type: TagType, at milliseconds: UInt32, body: [UInt8],
                    then rest: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0)) -> [UInt8] {
        let size = body.count + rest.count
        var tag: [UInt8] = []
        tag.reserveCapacity(11 + size + 4)
        tag.append(type.rawValue)
        tag.append(contentsOf: bigEndian(UInt32(size), bytes: 3))
        tag.append(contentsOf: bigEndian(milliseconds & 0xFF_FFFF, bytes: 3))
        tag.append(UInt8(milliseconds >> 24))
        tag.append(contentsOf: [0, 0, 0])
        tag.append(contentsOf: body)
        tag.append(contentsOf: rest)
        tag.append(contentsOf: bigEndian(UInt32(11 + size), bytes: 4))
        return tag
    }

    /// The script tag's body: AMF0 "onMetaData" and an ECMA array of what is known, named as
    /// flvmux and ffmpeg name it (codec ids 7 H.264 and 10 AAC).
    static func onMetaData(_ metadata: Metadata) -> [UInt8] {
        var entries: [(String, AMF0)] = []
        if let width = metadata.width { entries.append(("width", .number(Double(width)))) }
        if let height = metadata.height { entries.append(("height", .number(Double(height)))) }
        if let framerate = metadata.framerate { entries.append(("framerate", .number(framerate))) }
        if metadata.width != nil { entries.append(("videocodecid", .number(7))) }
        if let rate = metadata.audioRate {
            entries.append(("audiocodecid", .number(10)))
            entries.append(("audiosamplerate", .number(Double(rate))))
            entries.append(("audiosamplesize", .number(16)))
        }
        if let channels = metadata.audioChannels { entries.append(("stereo", .boolean(channels > 1))) }
        entries.append(("encoder", .string("castline")))
        var body = AMF0.string("onMetaData").encoded
        body.append(0x08)
        body.append(contentsOf: bigEndian(UInt32(entries.count), bytes: 4))
        for (key, value) in entries {
            body.append(contentsOf: AMF0.shortString(key))
            body.append(contentsOf: value.encoded)
        }
        body.append(contentsOf: [0, 0, 9])  // the array's end marker
        return body
    }

    enum AMF0 {
        case number(Double), boolean(Bool), string(String)

        var encoded: [UInt8] {
            switch self {
            case .number(let value): [0x00] + bigEndian(value.bitPattern, bytes: 8)
            case .boolean(let value): [0x01, value ? 1 : 0]
            case .string(let value): [0x02] + Self.shortString(value)
            }
        }

        static func shortString(_ text: String) -> [UInt8] {
            let utf8 = Array(text.utf8.prefix(Int(UInt16.max)))
            return bigEndian(UInt32(utf8.count), bytes: 2) + utf8
        }
    }
}

/// The low `bytes` bytes of `value`, most significant first.
private func bigEndian<T: FixedWidthInteger>(_ value: T, bytes: Int) -> [UInt8] {
    (0..<bytes).reversed().map { UInt8(truncatingIfNeeded: value >> ($0 * 8)) }
}
