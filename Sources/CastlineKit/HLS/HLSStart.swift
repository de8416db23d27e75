import Foundation
import HLS
import Synchronization

/// One media playlist castline reads: the main one, or a separate audio
/// rendition beside it. Worked out before anything is built: the segment to
/// start from (further back in a live window when a delay stage wants history)
/// and that segment's bytes, whose head says which streams there are and where
/// they sit on the stream's own time line.
struct HLSTrack: Sendable {
    enum Container: Sendable, Equatable {
        case transportStream, fragmentedMP4
        /// Audio elementary stream segments (RFC 8216 §3.4), each opening with an ID3 tag.
        case packedAudio(PackedAudio.Codec)
    }

    var reader: SegmentReader
    var playlist: MediaPlaylist
    var fetchedAt: (sent: Int64, received: Int64)
    var sequence: Int
    /// Seconds earlier than a player would start (3 target durations from the end).
    var startBack: Double
    var first: Data
    var container: Container
    /// The streams it carries (from CODECS, or its first segment's head).
    var streams: [StreamKind: Codec?]
    /// The first segment's first PTS of each stream (90 kHz: MPEG-TS, and packed audio's ID3 timestamp).
    var firstPTS: [StreamKind: UInt64]

    /// Where a player plays at delay 0: this far behind the live edge.
    var holdBack: Double { 3 * playlist.targetDuration }
    var earliestPTS: UInt64? { firstPTS.values.min() }
    var startSegment: HLS.Segment? { playlist.segments.first { $0.sequence == sequence } }
}

extension HLSTrack.Container {
    /// Segments whose first buffer is stamped with their place on the time line (TIME format):
    /// MPEG-TS (its own PTS time the rest) and packed audio (its parser counts samples on).
    var isStampedBySegment: Bool { self != .fragmentedMP4 }

    /// What appsrc says it carries.
    var caps: String? {
        switch self {
        case .transportStream: "video/mpegts, systemstream=(boolean)true, packetsize=(int)188"
        case .fragmentedMP4: nil
        case .packedAudio(.aac): "audio/mpeg, mpegversion=(int)4, stream-format=(string)adts"
        case .packedAudio(.mp3): "audio/mpeg, mpegversion=(int)1"
        case .packedAudio(.ac3): "audio/x-ac3"
        case .packedAudio(.eac3): "audio/x-eac3"
        }
    }
}

/// What an HLS source plays: one track, or a video track and a separate audio
/// rendition; and the variants `rendition: auto` adapts across.
struct HLSStart: Sendable {
    var tracks: [HLSTrack]
    var variants: [MultivariantPlaylist.Variant]
    var variant: MultivariantPlaylist.Variant?

    /// Every stream, each from the track that carries it (a separate audio rendition's audio wins).
    var streams: [StreamKind: Codec?] {
        tracks.reversed().reduce(into: [:]) { streams, track in
            for (kind, codec) in track.streams where streams[kind] == nil { streams[kind] = codec }
        }
    }

    /// The track a stream comes from.
    func track(of stream: StreamKind) -> Int? {
        tracks.indices.last { tracks[$0].streams[stream] != nil }
    }

    static func prepare(url: URL, rendition: String, wantVideo: Bool, historyWanted: Double?, waitForLive: Bool,
                        endAfter: Duration, fetcher: HTTPFetcher, keyPath: String, events: EventEmitter) async throws -> HLSStart {
        let waiting = WaitingOn("the playlist \(url.absoluteString) to answer")
        // A start that hangs says on what, once; the request timeout ends it later.
        let announcing = Task {
            try await Task.sleep(for: .seconds(2))
            events.emit(.notice("still connecting: waiting for \(waiting.what)"))
        }
        defer { announcing.cancel() }
        let top = try await fetchTop(url, waitForLive: waitForLive, fetcher: fetcher, waiting: waiting, keyPath: keyPath, events: events)
        guard case .multivariant(let multivariant) = top.playlist else {
            // A media playlist: the fetch just made is its first read.
            let fetched = top.playlist.media.map { SegmentReader.Fetched(playlist: $0, sent: top.sent, received: top.received) }
            let track = try await prepareTrack(url, declared: nil, fetched: fetched, waiting: waiting, historyWanted: historyWanted,
                                               endAfter: endAfter, fetcher: fetcher, keyPath: keyPath)
            return HLSStart(tracks: [track], variants: [], variant: nil)
        }
        let choice = try HLSRenditions.choose(rendition, from: multivariant, wantVideo: wantVideo, keyPath: keyPath)
        var tracks: [HLSTrack] = []
        if wantVideo || choice.audioRendition == nil {
            events.emit(.renditionChanged(HLSRenditions.describe(choice.variant)))
            tracks.append(try await prepareTrack(choice.variant.uri, declared: HLSRenditions.streams(named: choice.variant.codecs), waiting: waiting,
                                                 historyWanted: historyWanted, endAfter: endAfter, fetcher: fetcher, keyPath: keyPath))
        }
        if let audio = choice.audioRendition, let uri = audio.uri {
            events.emit(.renditionChanged("audio \(audio.name)"))
            var track = try await prepareTrack(uri, declared: nil, waiting: waiting, historyWanted: historyWanted, endAfter: endAfter, fetcher: fetcher, keyPath: keyPath)
            track.streams = track.streams.filter { $0.key == .audio }
            tracks.append(track)
        }
        return HLSStart(tracks: tracks, variants: choice.adaptive ? multivariant.variants : [], variant: choice.variant)
    }

    /// A media playlist's track: fetched, waited for while it lists nothing, its first segment read.
    private static func prepareTrack(_ url: URL, declared: [StreamKind: Codec?]?, fetched first: SegmentReader.Fetched? = nil, waiting: WaitingOn,
                                     historyWanted: Double?, endAfter: Duration, fetcher: HTTPFetcher, keyPath: String) async throws -> HLSTrack {
        var options = SegmentReader.Options()
        options.endAfter = endAfter
        options.timeLiveEdge = historyWanted != nil
        let reader = SegmentReader(playlistURL: url, fetcher: fetcher, options: options)
        var fetched: SegmentReader.Fetched
        waiting.what = "the playlist \(url.absoluteString) to answer"
        if let first { fetched = first } else { fetched = try await located(keyPath) { try await reader.fetchPlaylist(url) } }
        // A live playlist that lists nothing yet is waited for, as a live stream that has not started.
        let waitingSince = ContinuousClock.now
        if fetched.playlist.segments.isEmpty { waiting.what = "the playlist \(url.absoluteString) to list a segment" }
        while fetched.playlist.segments.isEmpty {
            guard fetched.playlist.isLive, ContinuousClock.now - waitingSince < endAfter else {
                throw BuildError("the playlist listed no segment within \(endAfter.configText) (the stream has not started)",
                                 at: "\(keyPath).url", badInput: true)
            }
            try await Task.sleep(for: .seconds(max(0.5, fetched.playlist.targetDuration / 2)))
            fetched = try await located(keyPath) { try await reader.fetchPlaylist(url) }
        }
        let playlist = fetched.playlist
        if let key = playlist.segments.lazy.compactMap(\.key).first(where: { $0.method != .aes128 }) {
            let what = key.method == .sampleAES ? "SAMPLE-AES" : "\(key.method)"
            throw BuildError("the segments are encrypted with \(what)\(key.keyFormat.map { " (\($0))" } ?? ""); castline plays clear and AES-128 segments only",
                             at: "\(keyPath).url", badInput: true)
        }
        guard let start = SegmentReader.start(in: playlist, back: historyWanted ?? 0),
              let segment = playlist.segments.first(where: { $0.sequence == start.sequence }) else {
            throw BuildError("the playlist lists no segments", at: "\(keyPath).url", badInput: true)
        }
        waiting.what = "the first segment \(segment.uri.absoluteString) to arrive"
        let first = try await located(keyPath) { try await reader.fetchWhole(segment) }
        // What the segment holds is told by its bytes: a name can lie (MPEG-TS in files named .aac).
        let opening = [UInt8](first.prefix(4096))
        let container: HLSTrack.Container
        switch PackedAudio.sniff(opening) {
        case _ where segment.initSection != nil: container = .fragmentedMP4
        case .transportStream?: container = .transportStream
        case .packed(let codec)?: container = .packedAudio(codec)
        case nil:
            throw BuildError("cannot tell what \(segment.uri.lastPathComponent) holds: not MPEG-TS, fMP4 or packed audio (it starts with "
                             + opening.prefix(4).map { String(format: "%02x", $0) }.joined() + ")",
                             at: "\(keyPath).url", badInput: true)
        }
        let head = container == .transportStream ? TransportStreamHead.read([UInt8](first)) : nil
        guard let streams = declared ?? HLSRenditions.streams(in: first, container: container, transportStream: head) else {
            throw BuildError("cannot tell what \(segment.uri.lastPathComponent) holds (not MPEG-TS, fMP4 or packed audio)",
                             at: "\(keyPath).url", badInput: true)
        }
        var firstPTS: [StreamKind: UInt64] = [:]
        for (kind, pts) in head?.firstPTS ?? [:] { firstPTS[kind == .audio ? .audio : .video] = pts }
        // Packed audio is timed by its ID3 tag's transport stream timestamp, where it has one.
        if case .packedAudio = container, case .whole(_, let timestamp?) = PackedAudio.tag(opening) { firstPTS[.audio] = timestamp }
        return HLSTrack(reader: reader, playlist: playlist, fetchedAt: (fetched.sent, fetched.received), sequence: start.sequence,
                        startBack: start.startBack, first: first, container: container, streams: streams, firstPTS: firstPTS)
    }

    /// The playlist at `url` and when it was fetched (monotonic ns), waiting while it is not
    /// there yet (HTTP 404) when asked to.
    private static func fetchTop(_ url: URL, waitForLive: Bool, fetcher: HTTPFetcher, waiting: WaitingOn, keyPath: String,
                                 events: EventEmitter) async throws -> (playlist: Playlist, sent: Int64, received: Int64) {
        var announced = false
        while true {
            do {
                let sent = MonotonicTime.now()
                let body = try await fetcher.data(url, limit: PlaylistParser.maxBytes)
                return (try PlaylistParser.parse(body, base: url), sent, MonotonicTime.now())
            } catch FetchError.http(status: 404, _) where waitForLive {
                if !announced {
                    waiting.what = "\(url.absoluteString) to go live"
                    events.emit(.notice("waiting for \(url.absoluteString) to go live (HTTP 404); retrying every 2 s"))
                    announced = true
                }
                try await Task.sleep(for: .seconds(2))
            } catch FetchError.http(status: 404, let missing) {
                throw BuildError("the playlist is not there (HTTP 404 for \(missing)); if the stream is not live yet, add --wait-for-live",
                                 at: "\(keyPath).url", badInput: true)
            } catch let error as FetchError {
                throw BuildError("cannot fetch the playlist: \(error) (check the URL and the network)", at: "\(keyPath).url",
                                 badInput: !error.isTransient)
            } catch let error as PlaylistError {
                throw BuildError("\(error)", at: "\(keyPath).url", badInput: true)
            }
        }
    }

    /// Runs `body`, turning what the HLS client throws into a located build error: bad input
    /// when the server said what it has is no playable stream, else trouble reaching it.
    private static func located<T>(_ keyPath: String, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as BuildError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as FetchError {
            throw BuildError("\(error)", at: "\(keyPath).url", badInput: !error.isTransient)
        } catch let error as SegmentReader.ReadFailure {
            throw BuildError("\(error)", at: "\(keyPath).url", badInput: !error.isTransient)
        } catch {
            throw BuildError("\(error)", at: "\(keyPath).url", badInput: true)
        }
    }
}

/// What a start is waiting on, for the line that says so.
final class WaitingOn: Sendable {
    private let state: Mutex<String>
    init(_ what: String) { state = Mutex(what) }
    var what: String {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
