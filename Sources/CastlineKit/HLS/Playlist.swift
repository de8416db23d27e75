import Foundation

/// What an HLS playlist says, as far as castline needs it.
public enum HLSPlaylist: Equatable, Sendable {
    case master([Variant])
    case media(Media)

    public struct Variant: Equatable, Sendable {
        public var uri: URL
        public var bandwidth: Int
        public var resolution: String?
        public var codecs: [String]
        public var name: String?

        /// Says it carries audio and no video (by its CODECS, or by having audio codecs and no resolution).
        public var isAudioOnly: Bool {
            !codecs.isEmpty && codecs.allSatisfy(Self.isAudioCodec)
        }

        public var hasVideo: Bool? {
            codecs.isEmpty ? nil : codecs.contains { !Self.isAudioCodec($0) }
        }

        static func isAudioCodec(_ codec: String) -> Bool {
            ["mp4a", "ac-3", "ec-3", "opus", "flac", "mp3"].contains { codec.lowercased().hasPrefix($0) }
        }
    }

    public struct Media: Equatable, Sendable {
        public var targetDuration: Double
        /// `#EXT-X-ENDLIST`: the whole stream is here (VOD, or a live stream that has ended).
        public var isEnded: Bool
        /// `#EXT-X-MEDIA-SEQUENCE`: the number of the first segment listed.
        public var mediaSequence = 0
        /// Each listed segment's `#EXTINF` seconds, in order (the first is `mediaSequence`).
        public var segmentDurations: [Double] = []
        public var segmentCount: Int { segmentDurations.count }
        /// Seconds of media the playlist lists.
        public var duration: Double { segmentDurations.reduce(0, +) }
        /// Each listed segment's URI, in order.
        public var segmentURIs: [URL] = []
        /// `#EXT-X-MAP`: segments are fragments of a file whose head is here (fMP4).
        public var hasInitSection = false
        /// `#EXT-X-KEY` with a method other than NONE: the segments are encrypted.
        public var isEncrypted = false
    }

    /// Parses playlist text; `base` resolves relative URIs.
    public static func parse(_ text: String, base: URL) throws(HLSError) -> HLSPlaylist {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard lines.first?.hasPrefix("#EXTM3U") == true else {
            let sample = lines.first.map { String($0.prefix(40)) } ?? "an empty body"
            throw .notHLS("it does not start with #EXTM3U (it starts with \"\(sample)\")")
        }
        var variants: [Variant] = []
        var pending: [String: String]?
        var media = Media(targetDuration: 0, isEnded: false)
        for line in lines.dropFirst() {
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                pending = attributes(String(line.dropFirst("#EXT-X-STREAM-INF:".count)))
            } else if line.hasPrefix("#EXT-X-TARGETDURATION:") {
                media.targetDuration = Double(line.dropFirst("#EXT-X-TARGETDURATION:".count)) ?? 0
            } else if line.hasPrefix("#EXTINF:") {
                let value = line.dropFirst("#EXTINF:".count).prefix { $0 != "," }
                media.segmentDurations.append(Double(value) ?? 0)
            } else if line.hasPrefix("#EXT-X-MEDIA-SEQUENCE:") {
                media.mediaSequence = Int(line.dropFirst("#EXT-X-MEDIA-SEQUENCE:".count)) ?? 0
            } else if line == "#EXT-X-ENDLIST" {
                media.isEnded = true
            } else if line.hasPrefix("#EXT-X-MAP:") {
                media.hasInitSection = true
            } else if line.hasPrefix("#EXT-X-KEY:") {
                media.isEncrypted = attributes(String(line.dropFirst("#EXT-X-KEY:".count)))["METHOD"] != "NONE"
            } else if !line.isEmpty, !line.hasPrefix("#"), pending == nil {
                if let uri = URL(string: line, relativeTo: base)?.absoluteURL { media.segmentURIs.append(uri) }
            } else if !line.isEmpty, !line.hasPrefix("#"), let attributes = pending {
                pending = nil
                guard let uri = URL(string: line, relativeTo: base)?.absoluteURL else { continue }
                variants.append(Variant(
                    uri: uri, bandwidth: Int(attributes["BANDWIDTH"] ?? "") ?? 0, resolution: attributes["RESOLUTION"],
                    codecs: attributes["CODECS"].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? [],
                    name: attributes["NAME"]))
            }
        }
        if !variants.isEmpty { return .master(variants) }
        guard media.segmentCount > 0 || !media.isEnded else { throw .notHLS("the playlist lists no segments") }
        return .media(media)
    }

    /// `KEY=VALUE,KEY="quoted, value"` attribute lists.
    static func attributes(_ text: String) -> [String: String] {
        var result: [String: String] = [:]
        var key = "", value = "", inKey = true, quoted = false
        for character in text + "," {
            switch character {
            case "=" where inKey: inKey = false
            case "\"": quoted.toggle()
            case "," where !quoted:
                if !key.isEmpty { result[key.trimmingCharacters(in: .whitespaces)] = value }
                key = ""; value = ""; inKey = true
            default:
                if inKey { key.append(character) } else { value.append(character) }
            }
        }
        return result
    }
}

public enum HLSError: Error, Sendable, Equatable, CustomStringConvertible {
    case notHLS(String)
    case http(status: Int, url: String)
    case network(String)
    case noRendition(String)

    public var description: String {
        switch self {
        case .notHLS(let why): "not an HLS playlist: \(why) (check the URL; it should end in .m3u8)"
        case .http(let status, let url): "the server answered HTTP \(status) for \(url)"
        case .network(let why): "cannot fetch the playlist: \(why) (check the URL and the network)"
        case .noRendition(let what): what
        }
    }
}
