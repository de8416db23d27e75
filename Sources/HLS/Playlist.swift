@_exported import HTTPClient
import Foundation

/// An HLS playlist (RFC 8216): a multivariant ("master") playlist naming
/// renditions, or a media playlist listing segments.
public enum Playlist: Equatable, Sendable {
    case multivariant(MultivariantPlaylist)
    case media(MediaPlaylist)
}

/// `#EXT-X-STREAM-INF` variants and `#EXT-X-MEDIA` renditions (§4.3.4).
public struct MultivariantPlaylist: Equatable, Sendable {
    public var variants: [Variant] = []
    public var renditions: [Rendition] = []
    public init(variants: [Variant] = [], renditions: [Rendition] = []) {
        self.variants = variants
        self.renditions = renditions
    }

    /// `#EXT-X-STREAM-INF` and the URI after it.
    public struct Variant: Equatable, Sendable {
        public var uri: URL
        public var bandwidth: Int
        public var averageBandwidth: Int?
        /// `WIDTHxHEIGHT`, as written.
        public var resolution: String?
        public var codecs: [String]
        public var frameRate: Double?
        /// `AUDIO`: the group ID of the `#EXT-X-MEDIA:TYPE=AUDIO` renditions that go with it.
        public var audioGroup: String?
        public var videoGroup: String?
        /// `NAME` (not in the RFC; some packagers write it).
        public var name: String?

        public init(uri: URL, bandwidth: Int, averageBandwidth: Int? = nil, resolution: String? = nil, codecs: [String] = [],
                    frameRate: Double? = nil, audioGroup: String? = nil, videoGroup: String? = nil, name: String? = nil) {
            self.uri = uri
            self.bandwidth = bandwidth
            self.averageBandwidth = averageBandwidth
            self.resolution = resolution
            self.codecs = codecs
            self.frameRate = frameRate
            self.audioGroup = audioGroup
            self.videoGroup = videoGroup
            self.name = name
        }

        /// Carries audio and no video, by its CODECS.
        public var isAudioOnly: Bool { !codecs.isEmpty && codecs.allSatisfy(Self.isAudioCodec) }

        /// Whether CODECS names a video codec; nil without CODECS.
        public var hasVideo: Bool? { codecs.isEmpty ? nil : codecs.contains { !Self.isAudioCodec($0) } }

        public static func isAudioCodec(_ codec: String) -> Bool {
            ["mp4a", "ac-3", "ec-3", "opus", "flac", "mp3", ".mp3"].contains { codec.lowercased().hasPrefix($0) }
        }
    }

    /// `#EXT-X-MEDIA`.
    public struct Rendition: Equatable, Sendable {
        public enum MediaType: String, Sendable { case audio = "AUDIO", video = "VIDEO", subtitles = "SUBTITLES", closedCaptions = "CLOSED-CAPTIONS" }
        public var type: MediaType
        public var groupID: String
        public var name: String
        /// nil: the rendition is carried in the variant's own segments.
        public var uri: URL?
        public var language: String?
        public var isDefault: Bool
        public var autoselect: Bool

        public init(type: MediaType, groupID: String, name: String, uri: URL? = nil, language: String? = nil,
                    isDefault: Bool = false, autoselect: Bool = false) {
            self.type = type
            self.groupID = groupID
            self.name = name
            self.uri = uri
            self.language = language
            self.isDefault = isDefault
            self.autoselect = autoselect
        }
    }
}

/// A media playlist (§4.3.3): its segments in order.
public struct MediaPlaylist: Equatable, Sendable {
    public enum PlaylistType: String, Sendable { case event = "EVENT", vod = "VOD" }

    /// `#EXT-X-TARGETDURATION`, seconds.
    public var targetDuration: Double = 0
    /// `#EXT-X-MEDIA-SEQUENCE`: the sequence number of the first segment listed.
    public var mediaSequence = 0
    /// `#EXT-X-DISCONTINUITY-SEQUENCE`.
    public var discontinuitySequence = 0
    public var playlistType: PlaylistType?
    /// `#EXT-X-ENDLIST`: no segment will be added (VOD, or a live stream that ended).
    public var isEnded = false
    public var segments: [Segment] = []

    public init(targetDuration: Double = 0, mediaSequence: Int = 0, discontinuitySequence: Int = 0,
                playlistType: PlaylistType? = nil, isEnded: Bool = false, segments: [Segment] = []) {
        self.targetDuration = targetDuration
        self.mediaSequence = mediaSequence
        self.discontinuitySequence = discontinuitySequence
        self.playlistType = playlistType
        self.isEnded = isEnded
        self.segments = segments
    }

    /// Whether segments can still be added: the playlist must be reloaded (§6.3.4).
    public var isLive: Bool { !isEnded && playlistType != .vod }
    /// Seconds of media listed.
    public var duration: Double { segments.reduce(0) { $0 + $1.duration } }
    /// The sequence number after the last segment listed.
    public var endSequence: Int { mediaSequence + segments.count }
}

/// One media segment and what applies to it.
extension MediaPlaylist {
    /// This reload numbered on from `previous` (as castline numbered it; `declared`: the
    /// EXT-X-MEDIA-SEQUENCE the server gave then). A server that slides its window without
    /// raising EXT-X-MEDIA-SEQUENCE (ffmpeg's `single_file`: byte ranges of one growing file,
    /// always 0) lists other segments under the same numbers: segments are told by URI and
    /// byte range, and renumbered from where the first one listed stood before.
    public func renumbered(after previous: MediaPlaylist, declared: Int) -> MediaPlaylist {
        guard mediaSequence == declared, let first = segments.first else { return self }
        func same(_ a: Segment, _ b: Segment) -> Bool { a.uri == b.uri && a.byteRange == b.byteRange }
        let slid = previous.segments.firstIndex { same($0, first) } ?? previous.segments.count
        guard slid > 0 || previous.mediaSequence != mediaSequence else { return self }
        var fixed = self
        fixed.mediaSequence = previous.mediaSequence + slid
        for index in fixed.segments.indices { fixed.segments[index].sequence = fixed.mediaSequence + index }
        return fixed
    }
}

public struct Segment: Equatable, Sendable {
    public var uri: URL
    /// `#EXTINF` seconds.
    public var duration: Double
    /// Its media sequence number.
    public var sequence: Int
    /// `#EXT-X-DISCONTINUITY` precedes it.
    public var discontinuity = false
    /// `#EXT-X-BYTERANGE`: only these bytes of `uri`.
    public var byteRange: ByteRange?
    /// The `#EXT-X-KEY` in force (nil: clear).
    public var key: Key?
    /// The `#EXT-X-MAP` in force (fMP4's init section).
    public var initSection: InitSection?
    /// `#EXT-X-PROGRAM-DATE-TIME` of its first sample: given, or carried on from an earlier segment.
    public var programDateTime: Date?

    public init(uri: URL, duration: Double, sequence: Int, discontinuity: Bool = false, byteRange: ByteRange? = nil,
                key: Key? = nil, initSection: InitSection? = nil, programDateTime: Date? = nil) {
        self.uri = uri
        self.duration = duration
        self.sequence = sequence
        self.discontinuity = discontinuity
        self.byteRange = byteRange
        self.key = key
        self.initSection = initSection
        self.programDateTime = programDateTime
    }
}

/// `#EXT-X-KEY` with a method other than NONE.
public struct Key: Equatable, Sendable {
    public enum Method: Equatable, Sendable {
        case aes128
        case sampleAES
        /// Anything else (SAMPLE-AES-CTR, a DRM scheme): not playable here.
        case other(String)
    }
    public var method: Method
    public var uri: URL?
    /// `IV`: 16 bytes; nil means the media sequence number is the IV (§5.2).
    public var iv: [UInt8]?
    public var keyFormat: String?

    public init(method: Method, uri: URL?, iv: [UInt8]? = nil, keyFormat: String? = nil) {
        self.method = method
        self.uri = uri
        self.iv = iv
        self.keyFormat = keyFormat
    }
}

/// `#EXT-X-MAP`.
public struct InitSection: Equatable, Sendable {
    public var uri: URL
    public var byteRange: ByteRange?
    public init(uri: URL, byteRange: ByteRange? = nil) {
        self.uri = uri
        self.byteRange = byteRange
    }
}

/// Why a playlist cannot be read.
public enum PlaylistError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a playlist at all (an HTML page, an error body): `starts` is how it begins.
    case notAPlaylist(starts: String)
    /// Media itself (a segment's URL given for its playlist's): `format` is what it is.
    case media(format: String)
    /// It starts as a playlist but is not UTF-8 text (§4.1), e.g. Latin-1.
    case notUTF8
    /// Too large, or a line too long: refused before it costs memory.
    case tooLarge(String)
    /// A media playlist with a tag whose value makes no sense (`tag: what`).
    case malformed(String)

    public var description: String {
        switch self {
        case .notAPlaylist(let starts):
            "not an HLS playlist: it does not start with #EXTM3U (it starts with \"\(starts)\"); check that the URL is the stream's playlist, not a page or an error"
        case .media(let format):
            "not an HLS playlist: the URL gives \(format) media, a segment's worth; give the URL of the .m3u8 playlist that lists it"
        case .notUTF8: "the playlist is not UTF-8 text, as HLS requires (§4.1); check how the server writes it"
        case .tooLarge(let what): "the playlist is too large: \(what)"
        case .malformed(let what): "the playlist is malformed: \(what)"
        }
    }
}

extension Playlist {
    /// The media playlist, if that is what it is.
    public var media: MediaPlaylist? {
        if case .media(let media) = self { media } else { nil }
    }
}
