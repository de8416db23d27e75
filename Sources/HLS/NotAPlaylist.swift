import Foundation

/// What a body that is not a playlist is said to be: media of a known format (a segment's URL
/// given for its playlist's), or how it begins (a page, an error).
extension PlaylistParser {
    /// The media format a body that is not a playlist begins as, by its first bytes: what a
    /// segment's URL gives. Nil for anything else (a page, an error).
    static func mediaFormat(_ body: Bytes) -> String? {
        let count = body.count
        func ascii(_ from: Int, _ text: String) -> Bool {
            count >= from + text.utf8.count && text.utf8.enumerated().allSatisfy { body[from + $0.offset] == $0.element }
        }
        // A transport stream's packets are 188 bytes, each starting with the sync byte 0x47.
        if count >= 189, body[0] == 0x47, body[188] == 0x47, count < 377 || body[376] == 0x47 { return "MPEG-TS" }
        if ["ftyp", "styp", "moof", "moov", "sidx"].contains(where: { ascii(4, $0) }) { return "MP4" }
        // Packed audio (HLS §3.4) opens with an ID3 tag; bare ADTS with its 12-bit sync word.
        if ascii(0, "ID3") { return "packed audio (ID3-tagged)" }
        if count >= 2, body[0] == 0xFF, body[1] & 0xF6 == 0xF0 { return "AAC (ADTS)" }
        return nil
    }

    /// How a body that is not a playlist begins: its first 40 printable characters, blanks collapsed.
    static func opening(_ body: Bytes) -> String {
        var out = String.UnicodeScalarView()
        var blank = false
        // Repairs bad UTF-8 as U+FFFD, which is then left out with the control characters.
        for scalar in String(decoding: body.sub(0, 1024), as: UTF8.self).unicodeScalars {
            if scalar.properties.isWhitespace {
                blank = !out.isEmpty
            } else if scalar.value >= 0x20, scalar.value != 0x7F, scalar.value != 0xFFFD,
                      scalar.properties.generalCategory != .control, scalar.properties.generalCategory != .format {
                if blank { out.append(" ") }
                blank = false
                out.append(scalar)
            }
            if out.count >= 40 { break }
        }
        return out.isEmpty ? "binary data" : String(out).prefix(40).trimmingCharacters(in: .whitespaces)
    }
}
