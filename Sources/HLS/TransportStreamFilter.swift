import Foundation

/// Drops the elementary streams of an MPEG-TS byte stream that nobody wants
/// (the video of a muxed segment when listening audio-only) before the bytes
/// reach a demuxer, and rewrites the program map so the demuxer never learns of
/// them. Video is about 95 % of a muxed segment's packets; the demuxer would
/// otherwise reassemble and parse every one of its frames only to drop them.
///
/// The bytes stream through in chunks of any size; a packet split between two
/// chunks is kept until it is whole. Bytes off the packet grid (a sync byte lost)
/// are passed over until two sync bytes stand a packet apart, as a demuxer would.
public struct TransportStreamFilter: Sendable {
    private let keep: Set<MediaKind>
    private var mapPID: Int?
    private var dropped: Set<Int> = []
    private var partial: [UInt8] = []
    /// The sync byte was lost: a packet is taken again where two sync bytes stand a packet apart.
    private var lost = false

    /// `keep`: the kinds of stream to let through; data streams (ID3, SCTE-35) always pass.
    public init(keeping keep: Set<MediaKind>) {
        self.keep = keep
    }

    /// The whole packets of `chunk` (and of what an earlier chunk left over) that are kept.
    public mutating func filter(_ chunk: Data) -> Data {
        var bytes = partial
        bytes.append(contentsOf: chunk)
        let size = TransportStreamHead.packetSize
        var kept = [UInt8]()
        kept.reserveCapacity(bytes.count / 8)
        var offset = 0
        while offset + size <= bytes.count {
            guard bytes[offset] == 0x47 else {
                lost = true
                offset += 1
                continue
            }
            if lost {
                guard offset + size < bytes.count else { break }  // the next sync byte has not come yet
                guard bytes[offset + size] == 0x47 else {
                    offset += 1
                    continue
                }
                lost = false
            }
            var packet = bytes[offset..<offset + size]
            offset += size
            let pid = Int(packet[packet.startIndex + 1] & 0x1F) << 8 | Int(packet[packet.startIndex + 2])
            if dropped.contains(pid) { continue }
            if pid == 0 {
                learnProgramMap(packet)
            } else if pid == mapPID, let rewritten = rewriteProgramMap(packet) {
                packet = rewritten[...]
            }
            kept.append(contentsOf: packet)
        }
        partial = Array(bytes[offset...])
        return Data(kept)
    }

    private mutating func learnProgramMap(_ packet: ArraySlice<UInt8>) {
        guard let header = TransportStreamHead.PacketHeader(packet), header.startsSection,
              let section = TransportStreamHead.section(in: packet, payloadAt: header.payloadStart),
              let pid = TransportStreamHead.programMapPID(section) else { return }
        mapPID = pid
    }

    /// The program map packet without the streams not kept (and with no PCR PID when the
    /// PCR rode on one of them: the demuxer here times by PTS), its CRC made anew; nil to
    /// pass it as it is (a section that runs on into the next packet, or nothing to drop).
    private mutating func rewriteProgramMap(_ packet: ArraySlice<UInt8>) -> [UInt8]? {
        guard let header = TransportStreamHead.PacketHeader(packet), header.startsSection else { return nil }
        var out = Array(packet)
        let start = header.payloadStart - packet.startIndex + 1 + Int(out[header.payloadStart - packet.startIndex])
        guard start + 12 <= out.count, out[start] == 0x02 else { return nil }
        let length = Int(out[start + 1] & 0x0F) << 8 | Int(out[start + 2])
        let end = start + 3 + length - 4  // the CRC's first byte
        guard length >= 13, end + 4 <= out.count else { return nil }
        let programInfo = Int(out[start + 10] & 0x0F) << 8 | Int(out[start + 11])
        var entry = start + 12 + programInfo
        var streams = [UInt8]()
        var removed: Set<Int> = []
        while entry + 5 <= end {
            let pid = Int(out[entry + 1] & 0x1F) << 8 | Int(out[entry + 2])
            let infoLength = Int(out[entry + 3] & 0x0F) << 8 | Int(out[entry + 4])
            let next = min(entry + 5 + infoLength, end)
            let kind = TransportStreamHead.stream(type: out[entry], descriptors: out[min(entry + 5, next)..<next])?.0
            if let kind, !keep.contains(kind) { removed.insert(pid) } else { streams += out[entry..<next] }
            entry = next
        }
        dropped = removed
        guard !removed.isEmpty else { return nil }
        let pcrPID = Int(out[start + 8] & 0x1F) << 8 | Int(out[start + 9])
        if removed.contains(pcrPID) {
            out[start + 8] |= 0x1F
            out[start + 9] = 0xFF
        }
        let head = Array(out[start..<(start + 12 + programInfo)])
        var section = head + streams
        let newLength = section.count - 3 + 4
        section[1] = (section[1] & 0xF0) | UInt8(newLength >> 8)
        section[2] = UInt8(newLength & 0xFF)
        let crc = Self.crc32(section)
        section += [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
        out.replaceSubrange(start..<out.count, with: section + [UInt8](repeating: 0xFF, count: out.count - start - section.count))
        return out
    }

    /// CRC-32/MPEG-2 (ISO 13818-1 annex A): polynomial 0x04C11DB7, not reflected, from all ones.
    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = (crc << 8) ^ crcTable[Int((crc >> 24) ^ UInt32(byte))] }
        return crc
    }

    private static let crcTable: [UInt32] = (0..<256).map { index in
        var value = UInt32(index) << 24
        for _ in 0..<8 { value = value & 0x8000_0000 != 0 ? (value << 1) ^ 0x04C1_1DB7 : value << 1 }
        return value
    }
}
