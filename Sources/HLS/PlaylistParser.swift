import Foundation

/// Reads an HLS playlist (RFC 8216 §4) into a `Playlist`.
///
/// Lenient where players are (blank lines, CRLF, a BOM, unknown tags, attributes out of order),
/// strict where a wrong value would be played wrong (durations, sequence numbers, byte ranges).
/// Never traps on any input: the fuzz harness in Fuzz/ holds it to that.
public enum PlaylistParser {
    /// A body larger than this is refused before it is read (ten hours of 1 s segments make
    /// ~1 MB). Parsed, a playlist costs about 25 times its text, so this bounds it near 200 MB.
    public static let maxBytes = 8 * 1024 * 1024
    /// A line longer than this is refused (§4.1 sets no limit; real lines are under 1 KiB).
    public static let maxLineBytes = 64 * 1024

    public static func parse(_ text: String, base: URL) throws(PlaylistError) -> Playlist {
        try parse(Data(text.utf8), base: base)
    }

    /// - Parameter base: the playlist's own URL, which relative URIs in it are resolved against (§4.1).
    public static func parse(_ data: Data, base: URL) throws(PlaylistError) -> Playlist {
        guard data.count <= maxBytes else {
            throw .tooLarge("the body is \(data.count) bytes, over the limit of \(maxBytes) bytes")
        }
        let result = data.withUnsafeBytes { raw in
            Result { () throws(PlaylistError) in try parse(raw.assumingMemoryBound(to: UInt8.self), base: base) }
        }
        return try result.get()
    }

    static func parse(_ body: Bytes, base: URL) throws(PlaylistError) -> Playlist {
        // A UTF-8 BOM and blank lines before #EXTM3U are not the body's start.
        var start = body.count >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF ? 3 : 0
        var lineNumber = 1
        while start < body.count, body[start].isBlank || body[start] == 0x0A {
            if body[start] == 0x0A { lineNumber += 1 }
            start += 1
        }
        let text = body.sub(start, body.count)
        guard !text.isEmpty else { throw .notAPlaylist(starts: "an empty body") }
        // §4.1: "Playlist files MUST be encoded in UTF-8"; an HTML page in Latin-1 is not one either.
        guard text.hasPrefix("#EXTM3U") else {
            if let format = mediaFormat(text) { throw .media(format: format) }
            throw .notAPlaylist(starts: opening(text))
        }
        guard String(validating: text, as: UTF8.self) != nil else { throw .notUTF8 }
        var reader = Reader(base: base)
        var position = 0
        while position < text.count {
            let end = text.find(0x0A, from: position) ?? text.count
            guard end - position <= maxLineBytes else {
                throw .tooLarge("line \(lineNumber) is \(end - position) bytes, over the limit of \(maxLineBytes) bytes")
            }
            try reader.read(text.sub(position, end).trimmed, line: lineNumber)
            position = end + 1
            lineNumber += 1
        }
        return try reader.playlist()
    }
}

/// One pass over the lines: tags set what applies to the next URI line, which becomes a segment
/// (after `#EXTINF`) or a variant (after `#EXT-X-STREAM-INF`).
private struct Reader {
    let resolver: URIResolver
    var media = MediaPlaylist()
    var variants: [MultivariantPlaylist.Variant] = []
    var renditions: [MultivariantPlaylist.Rendition] = []

    // For the next URI line.
    var duration: Double?
    var variant: MultivariantPlaylist.Variant?
    var variantLine: Int?
    var byteRange: (length: Int, offset: Int?)?
    var discontinuity = false
    var programDateTime: Date?

    // In force until changed.
    var key: Key?
    /// No segment since the last `#EXT-X-KEY`: the next one is the same key in another KEYFORMAT (§4.3.2.4).
    var keyTagsInARow = false
    var initSection: InitSection?
    /// `#EXT-X-SKIP` (a delta update): segments left out before the first one listed, which still count.
    var skipped = 0
    /// MEDIA-SEQUENCE or SKIP came after a segment: the segments are numbered again at the end (once:
    /// renumbering at each such tag would be quadratic in a hostile playlist).
    var renumber = false

    /// Where each resource's last sub-range ended: a `#EXT-X-BYTERANGE` without an offset starts there.
    var rangeEnds: [URL: Int] = [:]
    /// The last segment URI line and its URL: byte-range playlists name one file thousands of times.
    var lastURI: (line: Bytes, url: URL)?
    /// The first URI line with no `#EXTINF` before it: an error unless this turns out to be a multivariant playlist.
    var strayURI: (text: String, line: Int)?

    // What `fail` names. The tag stays bytes: a String per line would cost a tenth of the parse.
    var tag = Bytes(tag: "EXTM3U")
    var line = 0

    init(base: URL) { resolver = URIResolver(base: base) }

    func fail(_ what: String) -> PlaylistError { .malformed("#\(tag.string): \(what) (line \(line))") }

    mutating func read(_ text: Bytes, line: Int) throws(PlaylistError) {
        guard let first = text.first else { return }
        self.line = line
        guard first == UInt8(ascii: "#") else { return try uriLine(text) }
        // §4.1: "#EXT" starts a tag; any other "#" line is a comment.
        guard text.hasPrefix("#EXT") else { return }
        let colon = text.find(UInt8(ascii: ":")) ?? text.count
        let value = text.sub(colon + 1, text.count).trimmed
        tag = text.sub(1, colon)

        switch tag {
        case "EXTINF":
            // `<duration>,[<title>]`; a title is of no use here.
            var end = 0
            while end < value.count, value[end] != UInt8(ascii: ","), !value[end].isBlank { end += 1 }
            duration = try seconds(value.sub(0, end), "the duration")
            variant = nil
        case "EXT-X-BYTERANGE":
            byteRange = try range(value)
        case "EXT-X-DISCONTINUITY":
            discontinuity = true
        case "EXT-X-PROGRAM-DATE-TIME":
            guard let date = Value.date(value) else { throw fail("\(value.quoted) is not an ISO 8601 date and time") }
            programDateTime = date
        case "EXT-X-KEY":
            try readKey(AttributeList(value))
        case "EXT-X-MAP":
            let attributes = AttributeList(value)
            guard let uri = attributes["URI"] else { throw fail("it has no URI") }
            var byteRange: ByteRange?
            if let text = attributes["BYTERANGE"] {
                let (length, offset) = try range(text)
                byteRange = try ByteRange(offset: offset ?? 0, length: length, checked: self)
            }
            initSection = InitSection(uri: try resolve(uri), byteRange: byteRange)
        case "EXT-X-TARGETDURATION":
            media.targetDuration = try seconds(value, "the target duration")
        case "EXT-X-MEDIA-SEQUENCE":
            media.mediaSequence = try count(value, "the media sequence number", limit: Reader.sequenceLimit)
            // §4.3.3.2 puts it before the first segment; if it comes later, it still numbers them all.
            renumber = renumber || !media.segments.isEmpty
        case "EXT-X-DISCONTINUITY-SEQUENCE":
            media.discontinuitySequence = try count(value, "the discontinuity sequence number", limit: Reader.sequenceLimit)
        case "EXT-X-PLAYLIST-TYPE":
            media.playlistType = MediaPlaylist.PlaylistType(rawValue: value.string)
        case "EXT-X-ENDLIST":
            media.isEnded = true
        case "EXT-X-SKIP":
            // Only a client asking for a delta update gets one; still, the segments listed keep their numbers.
            guard let text = AttributeList(value)["SKIPPED-SEGMENTS"] else { throw fail("it has no SKIPPED-SEGMENTS") }
            skipped = try count(text, "SKIPPED-SEGMENTS", limit: Reader.sequenceLimit)
            renumber = renumber || !media.segments.isEmpty
        case "EXT-X-STREAM-INF":
            try readStreamInf(AttributeList(value))
        case "EXT-X-MEDIA":
            try readMedia(AttributeList(value))
        default:
            // EXTM3U, EXT-X-VERSION, EXT-X-I-FRAME-STREAM-INF, the other LL-HLS tags (EXT-X-PART, EXT-X-PRELOAD-HINT, ...),
            // EXT-X-DATERANGE, EXT-X-GAP and any tag to come: nothing in them changes which segments play, or how.
            break
        }
    }

    /// Sequence numbers stay far from Int.max, so `mediaSequence + index` can never overflow.
    static let sequenceLimit = 1 << 53

    mutating func uriLine(_ text: Bytes) throws(PlaylistError) {
        tag = Bytes(tag: "EXT-X-STREAM-INF")
        if var variant {
            variant.uri = try resolve(text)
            variants.append(variant)
            self.variant = nil
            return
        }
        tag = Bytes(tag: "EXTINF")
        guard let duration else {
            if strayURI == nil { strayURI = (text.quoted, line) }
            return
        }
        let uri: URL
        if let lastURI, lastURI.line.equals(text) {
            uri = lastURI.url
        } else {
            uri = try resolve(text)
            lastURI = (text, uri)
        }
        var segmentRange: ByteRange?
        if let byteRange {
            tag = Bytes(tag: "EXT-X-BYTERANGE")
            // §4.3.2.2: without an offset, the range starts where the previous range of this resource ended.
            let range = try ByteRange(offset: byteRange.offset ?? rangeEnds[uri] ?? 0, length: byteRange.length, checked: self)
            rangeEnds[uri] = range.offset + range.length
            segmentRange = range
        }
        media.segments.append(Segment(
            uri: uri, duration: duration, sequence: media.mediaSequence + skipped + media.segments.count,
            discontinuity: discontinuity, byteRange: segmentRange, key: key, initSection: initSection,
            programDateTime: programDateTime))
        // §4.3.2.6: a date is carried on to the segments after it, advanced by their durations.
        programDateTime = programDateTime?.addingTimeInterval(duration)
        self.duration = nil
        self.byteRange = nil
        discontinuity = false
        keyTagsInARow = false
    }

    mutating func readKey(_ attributes: AttributeList) throws(PlaylistError) {
        guard let method = attributes["METHOD"] else { throw fail("it has no METHOD") }
        var newKey: Key?
        if !method.equals("NONE") {
            var iv: [UInt8]?
            if let text = attributes["IV"] {
                guard let bytes = Value.hex(text, bytes: 16) else { throw fail("the IV \(text.quoted) is not 16 bytes in hexadecimal") }
                iv = bytes
            }
            newKey = Key(
                method: method.equals("AES-128") ? .aes128 : method.equals("SAMPLE-AES") ? .sampleAES : .other(method.string),
                uri: try attributes["URI"].map { (text) throws(PlaylistError) in try resolve(text) },
                iv: iv, keyFormat: attributes["KEYFORMAT"]?.string)
        }
        // One key in several formats (FairPlay, Widevine, identity): keep the one that can be played here.
        func isIdentity(_ key: Key?) -> Bool { key.map { $0.keyFormat == nil || $0.keyFormat == "identity" } ?? true }
        if !(keyTagsInARow && key != nil && isIdentity(key) && !isIdentity(newKey)) { key = newKey }
        keyTagsInARow = true
    }

    mutating func readStreamInf(_ attributes: AttributeList) throws(PlaylistError) {
        // BANDWIDTH is REQUIRED (§4.3.4.2), yet some servers leave it out; 0 ranks the variant last.
        var variant = MultivariantPlaylist.Variant(uri: resolver.base, bandwidth: 0)
        if let text = attributes["BANDWIDTH"] { variant.bandwidth = try count(text, "BANDWIDTH", limit: .max) }
        if let text = attributes["AVERAGE-BANDWIDTH"] { variant.averageBandwidth = try count(text, "AVERAGE-BANDWIDTH", limit: .max) }
        variant.resolution = attributes["RESOLUTION"]?.string
        variant.codecs = (attributes["CODECS"]?.string ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        // FRAME-RATE only informs the choice of variant: a bad one is dropped, not fatal.
        variant.frameRate = attributes["FRAME-RATE"].flatMap(Value.decimal).flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        variant.audioGroup = attributes["AUDIO"]?.string
        variant.videoGroup = attributes["VIDEO"]?.string
        variant.name = attributes["NAME"]?.string
        self.variant = variant
        variantLine = line
        duration = nil
    }

    mutating func readMedia(_ attributes: AttributeList) throws(PlaylistError) {
        // Without these no variant can name the rendition: it is skipped, not fatal.
        guard let type = attributes["TYPE"].flatMap({ MultivariantPlaylist.Rendition.MediaType(rawValue: $0.string) }),
              let groupID = attributes["GROUP-ID"], let name = attributes["NAME"] else { return }
        renditions.append(MultivariantPlaylist.Rendition(
            type: type, groupID: groupID.string, name: name.string,
            uri: try attributes["URI"].map { (text) throws(PlaylistError) in try resolve(text) },
            language: attributes["LANGUAGE"]?.string,
            isDefault: attributes["DEFAULT"]?.equals("YES") ?? false,
            autoselect: attributes["AUTOSELECT"]?.equals("YES") ?? false))
    }

    func playlist() throws(PlaylistError) -> Playlist {
        if !variants.isEmpty { return .multivariant(MultivariantPlaylist(variants: variants, renditions: renditions)) }
        if let variantLine { throw .malformed("#EXT-X-STREAM-INF: no URI line follows it (line \(variantLine))") }
        if let strayURI { throw .malformed("#EXTINF: none before the segment URI \(strayURI.text) (line \(strayURI.line))") }
        if media.isEnded, media.segments.isEmpty { throw .malformed("it lists no segments") }
        var media = media
        media.mediaSequence += skipped
        if renumber {
            for i in media.segments.indices { media.segments[i].sequence = media.mediaSequence + i }
        }
        return .media(media)
    }

    // MARK: values

    /// A duration: decimal-floating-point, at least 0 and at most a day.
    func seconds(_ text: Bytes, _ what: String) throws(PlaylistError) -> Double {
        guard let value = Value.decimal(text) else { throw fail("\(what) \(text.quoted) is not a number") }
        guard value >= 0 else { throw fail("\(what) \(text.string) is negative") }
        guard value <= 86_400 else { throw fail("\(what) \(text.quoted) is longer than a day") }
        return value
    }

    /// A decimal-integer from 0 to `limit`.
    func count(_ text: Bytes, _ what: String, limit: Int) throws(PlaylistError) -> Int {
        guard let value = Value.integer(text) else { throw fail("\(what) \(text.quoted) is not a whole number") }
        guard value >= 0 else { throw fail("\(what) \(text.string) is negative") }
        guard value <= limit, value < .max else { throw fail("\(what) \(text.quoted) is too large") }
        return value
    }

    func range(_ text: Bytes) throws(PlaylistError) -> (length: Int, offset: Int?) {
        guard let (length, offset) = Value.byteRange(text) else { throw fail("\(text.quoted) is not <length>[@<offset>]") }
        guard length > 0 else { throw fail("the range \(text.quoted) has no bytes") }
        guard length < .max, offset ?? 0 >= 0, offset ?? 0 < .max else { throw fail("the range \(text.quoted) is out of bounds") }
        return (length, offset)
    }

    func resolve(_ text: Bytes) throws(PlaylistError) -> URL {
        guard let url = resolver.resolve(text) else { throw fail("the URI \(text.quoted) is not a URL") }
        return url
    }
}

private extension UnsafeBufferPointer<UInt8> {
    /// A tag name in the program's own constants (valid for as long as the program runs).
    init(tag: StaticString) { self.init(start: tag.utf8Start, count: tag.utf8CodeUnitCount) }

    /// `switch tag { case "EXTINF": ... }` without making a String of it.
    static func ~= (name: StaticString, tag: Bytes) -> Bool { tag.equals(name) }
}

private extension ByteRange {
    /// One whose end (`offset + length`, and so `header`) cannot overflow.
    init(offset: Int, length: Int, checked reader: Reader) throws(PlaylistError) {
        guard !offset.addingReportingOverflow(length).overflow else {
            throw reader.fail("the range \(length)@\(offset) ends past the largest offset")
        }
        self.init(offset: offset, length: length)
    }
}

/// Resolves URIs against the playlist's URL (RFC 3986 §5.2). Most are plain relative paths: for
/// those the absolute string is built here and parsed once, a fraction of what Foundation's general
/// resolution costs; anything else (dot segments, `//host`, `?query`) goes to Foundation.
struct URIResolver {
    let base: URL
    /// The base up to its last `/` (`http://host/live/`).
    private let directory: String?
    /// `scheme://authority`, for paths from the root.
    private let origin: String?

    init(base: URL) {
        self.base = base.absoluteURL
        let directory = URL(string: "./", relativeTo: self.base)?.absoluteString
        self.directory = directory?.hasSuffix("/") == true ? directory : nil
        let root = URL(string: "/", relativeTo: self.base)?.absoluteString
        origin = root?.hasSuffix("/") == true ? root.map { String($0.dropLast()) } : nil
    }

    func resolve(_ text: Bytes) -> URL? {
        guard let first = text.first else { return nil }
        let string = text.string
        if hasScheme(text) { return URL(string: string) }
        let second = text.count > 1 ? text[1] : 0
        var fast: String?
        if first == UInt8(ascii: "/"), second != UInt8(ascii: "/"), !hasDotSegment(text), let origin {
            fast = origin + string
        } else if first != UInt8(ascii: "/"), first != UInt8(ascii: "?"), first != UInt8(ascii: "#"),
                  first != UInt8(ascii: "."), !hasDotSegment(text), let directory {
            fast = directory + string
        }
        if let fast, let url = URL(string: fast) { return url }
        return URL(string: string, relativeTo: base)?.absoluteURL
    }

    /// RFC 3986 §3.1: `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"` before any `/`, `?` or `#`.
    private func hasScheme(_ text: Bytes) -> Bool {
        guard let colon = text.find(UInt8(ascii: ":")), colon > 0 else { return false }
        for i in 0..<colon {
            let byte = text[i]
            let letter = (byte | 0x20) &- UInt8(ascii: "a") < 26
            let other = byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "+") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            guard letter || (i > 0 && other) else { return false }
        }
        return true
    }

    /// A `/.` anywhere: maybe a `.` or `..` segment, which only full resolution removes.
    private func hasDotSegment(_ text: Bytes) -> Bool {
        var from = 0
        while let slash = text.find(UInt8(ascii: "/"), from: from) {
            if slash + 1 < text.count, text[slash + 1] == UInt8(ascii: ".") { return true }
            from = slash + 1
        }
        return false
    }
}
