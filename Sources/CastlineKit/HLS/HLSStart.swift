import Foundation
import HLS

/// Where an HLS stream starts, worked out before anything is built: the media
/// playlist chosen, the segment to start from (further back in a live window
/// when a delay stage wants history), and that segment's bytes, whose head
/// says which streams there are and where they sit on the stream's time line.
struct HLSStart: Sendable {
    enum Container: Sendable { case transportStream, fragmentedMP4, packedAudio }

    var reader: SegmentReader
    var playlist: MediaPlaylist
    var fetchedAt: (sent: Int64, received: Int64)
    var sequence: Int
    /// Seconds earlier than a player would start (3 target durations from the end).
    var startBack: Double
    var first: Data
    var streams: [StreamKind: Codec?]
    var container: Container
    /// The first segment's first PTS of each stream (90 kHz, MPEG-TS only).
    var firstPTS: [StreamKind: UInt64]
    /// Renditions to adapt across (`rendition: auto` with video), and the one playing.
    var variants: [MultivariantPlaylist.Variant]
    var variant: MultivariantPlaylist.Variant?
    var endAfter: Duration

    /// Where a player plays at delay 0: this far behind the live edge.
    var holdBack: Double { 3 * playlist.targetDuration }

    static func prepare(url: URL, rendition: String, wantVideo: Bool, historyWanted: Double?, waitForLive: Bool,
                        endAfter: Duration, keyPath: String, events: EventEmitter) async throws -> HLSStart {
        let fetcher = HTTPFetcher.shared
        let top = try await fetchTop(url, fetcher: fetcher, waitForLive: waitForLive, keyPath: keyPath, events: events)
        var mediaURL = url
        var declared: [StreamKind: Codec?]?
        var variants: [MultivariantPlaylist.Variant] = []
        var chosen: MultivariantPlaylist.Variant?
        if case .multivariant(let multivariant) = top {
            let choice = try HLSRenditions.choose(rendition, from: multivariant, wantVideo: wantVideo, keyPath: keyPath)
            chosen = choice.variant
            if choice.adaptive { variants = multivariant.variants }
            if let audio = choice.audioRendition, let uri = audio.uri {
                mediaURL = uri
                events.emit(.renditionChanged("audio \(audio.name)"))
            } else {
                mediaURL = choice.variant.uri
                declared = HLSRenditions.streams(named: choice.variant.codecs)
                events.emit(.renditionChanged(HLSRenditions.describe(choice.variant)))
            }
        }
        var options = SegmentReader.Options()
        options.endAfter = endAfter
        options.timeLiveEdge = historyWanted != nil
        let reader = SegmentReader(playlistURL: mediaURL, fetcher: fetcher, options: options)
        var fetched = try await located(keyPath) { try await reader.fetchPlaylist(mediaURL) }
        // A live playlist that lists nothing yet is waited for, as a live stream that has not started.
        let waitingSince = ContinuousClock.now
        while fetched.playlist.segments.isEmpty {
            guard fetched.playlist.isLive, ContinuousClock.now - waitingSince < endAfter else {
                throw BuildError("the playlist listed no segment within \(endAfter.configText) (the stream has not started)",
                                 at: "\(keyPath).url")
            }
            try await Task.sleep(for: .seconds(max(0.5, fetched.playlist.targetDuration / 2)))
            fetched = try await located(keyPath) { try await reader.fetchPlaylist(mediaURL) }
        }
        let playlist = fetched.playlist
        if let key = playlist.segments.lazy.compactMap(\.key).first(where: { $0.method != .aes128 }) {
            let what = key.method == .sampleAES ? "SAMPLE-AES" : "\(key.method)"
            throw BuildError("the segments are encrypted with \(what)\(key.keyFormat.map { " (\($0))" } ?? ""); castline plays clear and AES-128 segments only",
                             at: "\(keyPath).url")
        }
        guard let start = SegmentReader.start(in: playlist, back: historyWanted ?? 0),
              let segment = playlist.segments.first(where: { $0.sequence == start.sequence }) else {
            throw BuildError("the playlist lists no segments", at: "\(keyPath).url")
        }
        let first = try await located(keyPath) { try await reader.fetchWhole(segment) }
        let head = segment.initSection == nil && SegmentHead.packedAudio(named: segment.uri) == nil
            ? TransportStreamHead.read([UInt8](first.prefix(TransportStreamHead.headBytes))) : nil
        guard let streams = declared ?? HLSRenditions.streams(in: first, segment: segment) else {
            throw BuildError("cannot tell what \(segment.uri.lastPathComponent) holds (not MPEG-TS, fMP4 or packed audio)",
                             at: "\(keyPath).url")
        }
        var firstPTS: [StreamKind: UInt64] = [:]
        for (kind, pts) in head?.firstPTS ?? [:] { firstPTS[kind == .audio ? .audio : .video] = pts }
        let container: Container = segment.initSection != nil ? .fragmentedMP4
            : SegmentHead.packedAudio(named: segment.uri) != nil ? .packedAudio : .transportStream
        return HLSStart(reader: reader, playlist: playlist, fetchedAt: (fetched.sent, fetched.received),
                        sequence: start.sequence, startBack: start.startBack, first: first, streams: streams,
                        container: container, firstPTS: firstPTS, variants: variants, variant: chosen, endAfter: endAfter)
    }

    /// The playlist at `url`, waiting while it is not there yet (HTTP 404) when asked to.
    private static func fetchTop(_ url: URL, fetcher: HTTPFetcher, waitForLive: Bool, keyPath: String,
                                 events: EventEmitter) async throws -> Playlist {
        var announced = false
        while true {
            do {
                let body = try await fetcher.data(url, limit: PlaylistParser.maxBytes)
                return try PlaylistParser.parse(body, base: url)
            } catch FetchError.http(status: 404, _) where waitForLive {
                if !announced {
                    events.emit(.notice("waiting for \(url.absoluteString) to go live (HTTP 404); retrying every 2 s"))
                    announced = true
                }
                try await Task.sleep(for: .seconds(2))
            } catch FetchError.http(status: 404, let where_) {
                throw BuildError("the playlist is not there (HTTP 404 for \(where_)); if the stream is not live yet, add --wait-for-live",
                                 at: "\(keyPath).url")
            } catch let error as FetchError {
                throw BuildError("cannot fetch the playlist: \(error) (check the URL and the network)", at: "\(keyPath).url")
            } catch let error as PlaylistError {
                throw BuildError("\(error)", at: "\(keyPath).url")
            }
        }
    }

    /// Runs `body`, turning what the HLS client throws into a located build error.
    private static func located<T>(_ keyPath: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as BuildError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw BuildError("\(error)", at: "\(keyPath).url")
        }
    }
}
