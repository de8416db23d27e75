import Foundation

/// An audio or video elementary stream.
public enum MediaKind: String, Sendable, Hashable, CaseIterable {
    case audio, video
}

/// What a segment holds, read from its first bytes: which streams (with their
/// codec's name, `aac`, `h264`..., nil for one castline does not name) and, for
/// MPEG-TS, each stream's first presentation timestamp (90 kHz), which places
/// the segment on the stream's own time line.
public struct SegmentHead: Equatable, Sendable {
    public var streams: [MediaKind: String?]
    public var firstPTS: [MediaKind: UInt64] = [:]
    /// The first program clock reference's base (90 kHz): tsdemux times a segment's
    /// PES against it, so a segment's PTS minus its PCR says where its media lands.
    public var firstPCR: UInt64?

    public init(streams: [MediaKind: String?], firstPTS: [MediaKind: UInt64] = [:], firstPCR: UInt64? = nil) {
        self.streams = streams
        self.firstPTS = firstPTS
        self.firstPCR = firstPCR
    }

    /// The streams that carry media in what was read: a program map may list a stream
    /// that never comes (nginx-rtmp lists video for an audio-only publish).
    public var carried: [MediaKind: String?] {
        firstPTS.isEmpty ? streams : streams.filter { firstPTS[$0.key] != nil }
    }

    /// The earliest first PTS of any stream (90 kHz).
    public var earliestPTS: UInt64? { firstPTS.values.min() }
}

/// Reads an MPEG-TS segment's program map (PAT, then PMT) and the first PES
/// timestamp of each stream it names.
public enum TransportStreamHead {
    /// Enough of a segment for its PAT, PMT and first PES headers.
    public static let headBytes = 64 * 1024

    /// The program map's first audio and video stream in `bytes`, with each one's
    /// first PTS when the bytes reach it; nil when `bytes` is not TS or holds no program map.
    public static func read(_ bytes: [UInt8]) -> SegmentHead? {
        var mapPID: Int?
        var head: SegmentHead?
        var pids: [Int: MediaKind] = [:]
        var firstPCR: UInt64?
        var offset = 0
        while offset + packetSize <= bytes.count {
            guard bytes[offset] == 0x47 else { break }
            let packet = bytes[offset..<offset + packetSize]
            offset += packetSize
            if firstPCR == nil { firstPCR = programClockReference(packet) }
            head?.firstPCR = firstPCR
            guard let header = PacketHeader(packet), header.startsSection else { continue }
            if header.pid == 0 {
                if let section = section(in: packet, payloadAt: header.payloadStart) { mapPID = programMapPID(section) }
            } else if header.pid == mapPID, head == nil {
                guard let section = section(in: packet, payloadAt: header.payloadStart),
                      let streams = programMapStreams(section, pids: &pids) else { continue }
                head = SegmentHead(streams: streams)
            } else if let kind = pids[header.pid], head?.firstPTS[kind] == nil,
                      let pts = presentationTime(packet[header.payloadStart...]) {
                head?.firstPTS[kind] = pts
                if let head, head.firstPTS.count == pids.count, head.firstPCR != nil { return head }
            }
        }
        return head
    }

    /// The PCR base (90 kHz) in a packet's adaptation field, if it carries one.
    static func programClockReference(_ packet: ArraySlice<UInt8>) -> UInt64? {
        let p = packet.startIndex
        guard packet[p + 3] & 0x20 != 0, packet[p + 4] >= 7, packet[p + 5] & 0x10 != 0 else { return nil }
        let b = packet[(p + 6)...(p + 10)].map(UInt64.init)
        return b[0] << 25 | b[1] << 17 | b[2] << 9 | b[3] << 1 | b[4] >> 7
    }

    /// The PTS of a PES header at the start of `payload` (ISO 13818-1 §2.4.3.7).
    static func presentationTime(_ payload: ArraySlice<UInt8>) -> UInt64? {
        let p = payload.startIndex
        guard payload.count >= 14, payload[p] == 0, payload[p + 1] == 0, payload[p + 2] == 1,
              payload[p + 7] & 0x80 != 0 else { return nil }
        let b = payload[(p + 9)...(p + 13)].map(UInt64.init)
        return (b[0] >> 1 & 0x07) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1
    }

    static let packetSize = 188

    struct PacketHeader {
        let pid: Int
        let startsSection: Bool
        let payloadStart: Int

        init?(_ packet: ArraySlice<UInt8>) {
            let base = packet.startIndex
            pid = Int(packet[base + 1] & 0x1F) << 8 | Int(packet[base + 2])
            startsSection = packet[base + 1] & 0x40 != 0
            let adaptation = (packet[base + 3] >> 4) & 0x3
            switch adaptation {
            case 1: payloadStart = base + 4
            case 3: payloadStart = base + 5 + Int(packet[base + 4])
            default: return nil
            }
            guard payloadStart < packet.endIndex else { return nil }
        }
    }

    /// The PSI section a packet starts (after its pointer field), up to its CRC;
    /// nil if it runs on into the next packet (not seen in HLS segments).
    static func section(in packet: ArraySlice<UInt8>, payloadAt start: Int) -> ArraySlice<UInt8>? {
        let sectionStart = start + 1 + Int(packet[start])
        guard sectionStart + 3 <= packet.endIndex else { return nil }
        let length = Int(packet[sectionStart + 1] & 0x0F) << 8 | Int(packet[sectionStart + 2])
        let end = sectionStart + 3 + length - 4
        guard length >= 9, end <= packet.endIndex else { return nil }
        return packet[sectionStart..<end]
    }

    /// The PAT's first program's map PID.
    static func programMapPID(_ section: ArraySlice<UInt8>) -> Int? {
        guard section.first == 0x00 else { return nil }
        var entry = section.startIndex + 8
        while entry + 4 <= section.endIndex {
            let program = Int(section[entry]) << 8 | Int(section[entry + 1])
            if program != 0 { return Int(section[entry + 2] & 0x1F) << 8 | Int(section[entry + 3]) }
            entry += 4
        }
        return nil
    }

    private static func programMapStreams(_ section: ArraySlice<UInt8>, pids: inout [Int: MediaKind]) -> [MediaKind: String?]? {
        guard section.first == 0x02, section.count >= 12 else { return nil }
        let base = section.startIndex
        let programInfo = Int(section[base + 10] & 0x0F) << 8 | Int(section[base + 11])
        var entry = base + 12 + programInfo
        var streams: [MediaKind: String?] = [:]
        while entry + 5 <= section.endIndex {
            let type = section[entry]
            let pid = Int(section[entry + 1] & 0x1F) << 8 | Int(section[entry + 2])
            let infoLength = Int(section[entry + 3] & 0x0F) << 8 | Int(section[entry + 4])
            let descriptors = section[min(entry + 5, section.endIndex)..<min(entry + 5 + infoLength, section.endIndex)]
            entry += 5 + infoLength
            guard let (kind, codec) = stream(type: type, descriptors: descriptors), streams[kind] == nil else { continue }
            streams[kind] = .some(codec)
            pids[pid] = kind
        }
        return streams
    }

    /// An elementary stream's kind and codec by its PMT stream type (ISO 13818-1
    /// table 2-34, and the registered private types HLS uses); nil for data.
    static func stream(type: UInt8, descriptors: ArraySlice<UInt8>) -> (MediaKind, String?)? {
        switch type {
        case 0x0F, 0x11: return (.audio, "aac")
        case 0x03, 0x04: return (.audio, "mp3")
        case 0x81, 0x87: return (.audio, nil)  // AC-3, E-AC-3
        case 0x1B: return (.video, "h264")
        case 0x24: return (.video, "h265")
        case 0x01, 0x02, 0x10: return (.video, nil)  // MPEG-1/2 and MPEG-4 part 2 video
        case 0x06:
            // PES private data: audio when a descriptor says which.
            var at = descriptors.startIndex
            while at + 2 <= descriptors.endIndex {
                let tag = descriptors[at], length = Int(descriptors[at + 1])
                let body = descriptors[min(at + 2, descriptors.endIndex)..<min(at + 2 + length, descriptors.endIndex)]
                if tag == 0x05, Array(body.prefix(4)) == Array("Opus".utf8) { return (.audio, "opus") }
                if tag == 0x6A || tag == 0x7A { return (.audio, nil) }  // AC-3, E-AC-3 descriptors
                at += 2 + length
            }
            return nil
        default: return nil
        }
    }
}
