import Foundation

/// What streams an HLS media playlist carries, read from the head of one of its
/// segments (an MPEG-TS segment's program map table, or a packed-audio segment's
/// name) instead of prerolling a second decoder on the stream: that discovery
/// cost about 0.18 CPU-s and 0.15 s before the first audio, and fetched the
/// playlist and three segments once more.
///
/// nil wherever it cannot tell (fMP4 or encrypted segments, a head that holds no
/// program map): the caller then discovers the streams the slow way.
enum SegmentProbe {
    /// How much of a segment is asked for: a TS segment starts with its PAT and PMT.
    static let headBytes = 64 * 1024

    /// The streams of the media playlist `media`, each with its codec (nil: one
    /// castline does not know, decoded and never kept encoded).
    static func streams(of media: HLSPlaylist.Media) async -> [StreamKind: Codec?]? {
        guard !media.hasInitSection, !media.isEncrypted,
              // The live edge's segment is the one most sure to be there still; a VOD's first is played first.
              let segment = media.isEnded ? media.segmentURIs.first : media.segmentURIs.last else { return nil }
        if let packed = packedAudio(named: segment) { return packed }
        // A server that ignores the range sends the whole segment (hlsdemux2 fetches it anyway).
        guard let head = try? await HLSFetcher.data(segment, firstBytes: headBytes) else { return nil }
        return transportStreams([UInt8](head))
    }

    /// Packed audio (RFC 8216 §3.4): the segment is the elementary stream itself.
    static func packedAudio(named segment: URL) -> [StreamKind: Codec?]? {
        switch segment.pathExtension.lowercased() {
        case "aac": [.audio: .aac]
        case "mp3": [.audio: .mp3]
        case "ac3", "ec3": [.audio: Codec?.none]
        default: nil
        }
    }

    /// The first audio and video stream of the MPEG-TS program map in `bytes`;
    /// nil when `bytes` is not TS or holds no whole program map.
    static func transportStreams(_ bytes: [UInt8]) -> [StreamKind: Codec?]? {
        var mapPID: Int?
        var offset = 0
        while offset + packetSize <= bytes.count {
            guard bytes[offset] == 0x47 else { return nil }
            let packet = bytes[offset..<offset + packetSize]
            offset += packetSize
            guard let header = PacketHeader(packet), header.startsSection,
                  let section = section(in: packet, payloadAt: header.payloadStart) else { continue }
            if header.pid == 0 {
                mapPID = programMapPID(section)
            } else if header.pid == mapPID {
                return programMapStreams(section)
            }
        }
        return nil
    }

    private static let packetSize = 188

    private struct PacketHeader {
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
    private static func section(in packet: ArraySlice<UInt8>, payloadAt start: Int) -> ArraySlice<UInt8>? {
        let sectionStart = start + 1 + Int(packet[start])
        guard sectionStart + 3 <= packet.endIndex else { return nil }
        let length = Int(packet[sectionStart + 1] & 0x0F) << 8 | Int(packet[sectionStart + 2])
        let end = sectionStart + 3 + length - 4
        guard length >= 9, end <= packet.endIndex else { return nil }
        return packet[sectionStart..<end]
    }

    /// The PAT's first program's map PID.
    private static func programMapPID(_ section: ArraySlice<UInt8>) -> Int? {
        guard section.first == 0x00 else { return nil }
        var entry = section.startIndex + 8
        while entry + 4 <= section.endIndex {
            let program = Int(section[entry]) << 8 | Int(section[entry + 1])
            if program != 0 { return Int(section[entry + 2] & 0x1F) << 8 | Int(section[entry + 3]) }
            entry += 4
        }
        return nil
    }

    private static func programMapStreams(_ section: ArraySlice<UInt8>) -> [StreamKind: Codec?]? {
        guard section.first == 0x02, section.count >= 12 else { return nil }
        let base = section.startIndex
        let programInfo = Int(section[base + 10] & 0x0F) << 8 | Int(section[base + 11])
        var entry = base + 12 + programInfo
        var streams: [StreamKind: Codec?] = [:]
        while entry + 5 <= section.endIndex {
            let type = section[entry]
            let infoLength = Int(section[entry + 3] & 0x0F) << 8 | Int(section[entry + 4])
            let descriptors = section[min(entry + 5, section.endIndex)..<min(entry + 5 + infoLength, section.endIndex)]
            entry += 5 + infoLength
            guard let (kind, codec) = stream(type: type, descriptors: descriptors), streams[kind] == nil else { continue }
            streams[kind] = .some(codec)
        }
        return streams
    }

    /// An elementary stream's kind and codec by its PMT stream type (ISO 13818-1
    /// table 2-34, and the registered private types HLS uses); nil for data.
    private static func stream(type: UInt8, descriptors: ArraySlice<UInt8>) -> (StreamKind, Codec?)? {
        switch type {
        case 0x0F, 0x11: return (.audio, .aac)
        case 0x03, 0x04: return (.audio, .mp3)
        case 0x81, 0x87: return (.audio, nil)  // AC-3, E-AC-3
        case 0x1B: return (.video, .h264)
        case 0x24: return (.video, .h265)
        case 0x01, 0x02, 0x10: return (.video, nil)  // MPEG-1/2 and MPEG-4 part 2 video
        case 0x06:
            // PES private data: audio when a descriptor says which.
            var at = descriptors.startIndex
            while at + 2 <= descriptors.endIndex {
                let tag = descriptors[at], length = Int(descriptors[at + 1])
                let body = descriptors[min(at + 2, descriptors.endIndex)..<min(at + 2 + length, descriptors.endIndex)]
                if tag == 0x05, Array(body.prefix(4)) == Array("Opus".utf8) { return (.audio, .opus) }
                if tag == 0x6A || tag == 0x7A { return (.audio, nil) }  // AC-3, E-AC-3 descriptors
                at += 2 + length
            }
            return nil
        default: return nil
        }
    }
}
