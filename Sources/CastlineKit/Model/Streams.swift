/// The bundle a pipeline carries: at most one audio and one video stream.
public enum StreamKind: String, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    case audio, video
    public var description: String { rawValue }
    public static func < (a: StreamKind, b: StreamKind) -> Bool { a.rawValue < b.rawValue }
    /// By case, not by the raw value a String enum hashes by default: streaming threads look
    /// streams up in dictionaries for every buffer.
    public func hash(into hasher: inout Hasher) { hasher.combine(self == .audio) }
}

/// Codecs castline knows how to name, parse, decode and (some of them) encode.
public enum Codec: String, Sendable, CaseIterable, CustomStringConvertible, OptionRepresentable {
    case h264, h265, vp8, vp9, av1, aac, opus, mp3, vorbis, flac
    public var description: String { rawValue }

    public var stream: StreamKind {
        switch self {
        case .h264, .h265, .vp8, .vp9, .av1: .video
        case .aac, .opus, .mp3, .vorbis, .flac: .audio
        }
    }

    /// The codec a caps media type names, e.g. `video/x-h264` → h264.
    /// `audio/mpeg` is AAC for mpegversion 2/4 and MP3 for 1.
    public init?(mediaType: String, mpegVersion: Int? = nil) {
        switch mediaType {
        case "video/x-h264": self = .h264
        case "video/x-h265": self = .h265
        case "video/x-vp8": self = .vp8
        case "video/x-vp9": self = .vp9
        case "video/x-av1": self = .av1
        case "audio/x-opus": self = .opus
        case "audio/x-vorbis": self = .vorbis
        case "audio/x-flac": self = .flac
        case "audio/mpeg": self = (mpegVersion == 1) ? .mp3 : .aac
        default: return nil
        }
    }

    /// The caps media type (AAC and MP3 share `audio/mpeg`).
    public var mediaType: String {
        switch self {
        case .aac, .mp3: "audio/mpeg"
        case .opus, .vorbis, .flac: "audio/x-\(rawValue)"
        case .h264, .h265, .vp8, .vp9, .av1: "video/x-\(rawValue)"
        }
    }
}

/// The form a stream is in at one point of the graph.
public enum StreamForm: Sendable, Hashable, CustomStringConvertible {
    case raw
    /// Encoded; nil when the codec is not known until media flows.
    case encoded(Codec?)

    public var description: String {
        switch self {
        case .raw: "raw"
        case .encoded(let codec?): codec.rawValue
        case .encoded(nil): "encoded"
        }
    }
}

/// What a stage or sink accepts on one stream. The builder converts to it.
public enum FormRequirement: Sendable, Hashable, CustomStringConvertible {
    case raw
    /// One of these codecs; the first is what the builder encodes to. Empty means any codec.
    case encoded([Codec])
    case any

    public func accepts(_ form: StreamForm) -> Bool {
        switch (self, form) {
        case (.any, _), (.raw, .raw): true
        case (.encoded(let codecs), .encoded(let codec)):
            codecs.isEmpty || codec.map(codecs.contains) ?? false
        default: false
        }
    }

    public var description: String {
        switch self {
        case .raw: "raw"
        case .any: "any form"
        case .encoded(let codecs) where codecs.isEmpty: "encoded"
        case .encoded(let codecs): codecs.map(\.rawValue).joined(separator: " or ")
        }
    }
}
