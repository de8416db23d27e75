import Foundation

/// What `rendition:` asks for.
public enum RenditionRequest: Sendable, Equatable {
    case auto, best, lowest
    /// The best variant at or under this many bit/s.
    case bitrate(Int)
    /// A variant by its NAME or RESOLUTION (`720p`).
    case named(String)
}

/// Which media playlist(s) of a multivariant playlist to play, and what
/// streams a media playlist carries (by codec name: `aac`, `h264`; nil for one not named).
public enum HLSRenditions {
    /// What to play: a variant (`adaptive`: the first of several to adapt across) and
    /// the `EXT-X-MEDIA` audio rendition with its own playlist that goes with it, if
    /// any (audio only, that one alone is fetched).
    public struct Choice: Sendable {
        public var variant: MultivariantPlaylist.Variant
        public var audioRendition: MultivariantPlaylist.Rendition?
        public var adaptive: Bool
    }

    public static func choose(_ request: RenditionRequest, from playlist: MultivariantPlaylist,
                              wantVideo: Bool) throws(StartFailure) -> Choice {
        let byBandwidth = playlist.variants.sorted { $0.bandwidth < $1.bandwidth }
        let withVideo = byBandwidth.filter { $0.hasVideo != false }
        func audioGroup(_ variant: MultivariantPlaylist.Variant) -> MultivariantPlaylist.Rendition? {
            guard let group = variant.audioGroup else { return nil }
            let renditions = playlist.renditions.filter { $0.type == .audio && $0.groupID == group && $0.uri != nil }
            return renditions.first(where: \.isDefault) ?? renditions.first
        }
        let noVariants = StartFailure("the multivariant playlist lists no variants", badInput: true)
        switch request {
        case .auto:
            if !wantVideo {
                // Audio only: an audio-only variant, or an audio group's own playlist; never video segments.
                if let audio = byBandwidth.last(where: \.isAudioOnly) { return Choice(variant: audio, adaptive: false) }
                if let variant = byBandwidth.first(where: { audioGroup($0) != nil }) {
                    return Choice(variant: variant, audioRendition: audioGroup(variant), adaptive: false)
                }
            }
            // Players start on the first variant listed, then adapt to the measured throughput.
            guard let first = playlist.variants.first(where: { !wantVideo || $0.hasVideo != false }) ?? playlist.variants.first
            else { throw noVariants }
            return Choice(variant: first, audioRendition: audioGroup(first), adaptive: wantVideo && withVideo.count > 1)
        case .best:
            guard let best = (wantVideo ? withVideo : byBandwidth).last ?? byBandwidth.last
            else { throw noVariants }
            return Choice(variant: best, audioRendition: audioGroup(best), adaptive: false)
        case .lowest:
            guard let lowest = (wantVideo ? withVideo : byBandwidth).first ?? byBandwidth.first
            else { throw noVariants }
            return Choice(variant: lowest, audioRendition: audioGroup(lowest), adaptive: false)
        case .bitrate(let bitsPerSecond):
            if let fitting = byBandwidth.last(where: { $0.bandwidth <= bitsPerSecond }) {
                return Choice(variant: fitting, audioRendition: audioGroup(fitting), adaptive: false)
            }
        case .named(let name):
            let wanted = name.lowercased()
            if let match = playlist.variants.first(where: {
                $0.name?.lowercased() == wanted || $0.resolution?.lowercased() == wanted
                    || $0.resolution.map { "\($0.split(separator: "x").last ?? "")p" } == wanted
            }) {
                return Choice(variant: match, audioRendition: audioGroup(match), adaptive: false)
            }
        }
        let known = byBandwidth.map(describe).joined(separator: "; ")
        let wanted = switch request {
        case .bitrate(let bitsPerSecond): "at or under \(bitsPerSecond / 1000)k"
        case .named(let name): "\"\(name)\""
        case .auto, .best, .lowest: "\(request)"
        }
        throw StartFailure("no rendition \(wanted) in the playlist (it has: \(known))", option: .rendition, badInput: true)
    }

    public static func describe(_ variant: MultivariantPlaylist.Variant) -> String {
        let size = variant.resolution ?? (variant.isAudioOnly ? "audio only" : "?")
        return "\(variant.name.map { "\($0) " } ?? "")\(size) \(variant.bandwidth / 1000)k"
    }

    /// Each stream `CODECS` names, with its codec (nil: one castline does not know; decoded).
    public static func streams(named codecs: [String]) -> [MediaKind: String?]? {
        guard !codecs.isEmpty else { return nil }
        var streams: [MediaKind: String?] = [:]
        for codec in codecs {
            let name = codec.lowercased()
            if MultivariantPlaylist.Variant.isAudioCodec(name) {
                streams[.audio] = .some(name.hasPrefix("mp4a") ? "aac" : name.hasPrefix("opus") ? "opus" : nil)
            } else {
                streams[.video] = .some(name.hasPrefix("avc") ? "h264" : name.hasPrefix("hvc") || name.hasPrefix("hev") ? "h265" : nil)
            }
        }
        return streams
    }

    /// The streams in a segment (MPEG-TS: those its program map lists and it carries;
    /// fMP4: the init section's track handlers; packed audio: its one); nil when it does not say.
    static func streams(in head: Data, container: HLSTrack.Container, transportStream: SegmentHead?) -> [MediaKind: String?]? {
        switch container {
        case .packedAudio(let codec): [.audio: codec.rawValue]
        case .fragmentedMP4: fragmentedMP4Streams([UInt8](head.prefix(64 * 1024)))
        case .transportStream: transportStream?.carried
        }
    }

    /// An fMP4 init section's tracks: each `hdlr` box's handler (`soun`, `vide`),
    /// and the sample entries (`mp4a`, `avc1`...) that name their codecs.
    static func fragmentedMP4Streams(_ bytes: [UInt8]) -> [MediaKind: String?]? {
        func contains(_ text: String) -> Bool {
            let pattern = Array(text.utf8)
            guard bytes.count >= pattern.count else { return false }
            return (0...(bytes.count - pattern.count)).contains { bytes[$0..<$0 + pattern.count].elementsEqual(pattern) }
        }
        var streams: [MediaKind: String?] = [:]
        if contains("soun") { streams[.audio] = .some(contains("mp4a") ? "aac" : contains("Opus") ? "opus" : nil) }
        if contains("vide") {
            streams[.video] = .some(contains("avc1") || contains("avc3") ? "h264" : contains("hvc1") || contains("hev1") ? "h265" : nil)
        }
        return streams.isEmpty ? nil : streams
    }
}
