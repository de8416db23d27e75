import Foundation
import HTTPClient
import Synchronization
import Timing

/// One media playlist castline reads: the main one, or a separate audio
/// rendition beside it. Worked out before anything is built: the segment to
/// start from (further back in a live window when a stage wants history)
/// and that segment's bytes, whose head says which streams there are and where
/// they sit on the stream's own time line.
public struct HLSTrack: Sendable {
    public enum Container: Sendable, Equatable {
        case transportStream, fragmentedMP4
        /// Audio elementary stream segments (RFC 8216 §3.4), each opening with an ID3 tag.
        case packedAudio(PackedAudio.Codec)
    }

    public var reader: SegmentReader
    public var playlist: MediaPlaylist
    public var fetchedAt: (sent: Int64, received: Int64)
    public var sequence: Int
    /// Seconds earlier than a player would start (3 target durations from the end).
    public var startBack: Double
    public var first: Data
    public var container: Container
    /// The streams it carries, by codec name (from CODECS, or its first segment's head).
    public var streams: [MediaKind: String?]
    /// The first segment's first PTS of each stream (90 kHz: MPEG-TS, and packed audio's ID3 timestamp).
    public var firstPTS: [MediaKind: UInt64]

    /// Where a player plays at delay 0: this far behind the live edge.
    public var holdBack: Double { 3 * playlist.targetDuration }
    public var earliestPTS: UInt64? { firstPTS.values.min() }
    public var startSegment: Segment? { playlist.segments.first { $0.sequence == sequence } }
}

extension HLSTrack.Container {
    /// Segments whose first buffer is stamped with their place on the time line (TIME format):
    /// MPEG-TS (its own PTS time the rest) and packed audio (its parser counts samples on).
    public var isStampedBySegment: Bool { self != .fragmentedMP4 }
}

/// What an HLS session plays: one track, or a video track and a separate audio rendition;
/// and the variants `rendition: auto` adapts across (see `ABRController`). Worked out
/// before anything plays: the playlists fetched, the rendition chosen, each track's start.
public struct HLSStart: Sendable {
    public var tracks: [HLSTrack]
    public var variants: [MultivariantPlaylist.Variant]
    public var variant: MultivariantPlaylist.Variant?

    /// What a start tells as it goes: a line for people (`still connecting: ...`), the rendition chosen.
    public struct Reports: Sendable {
        public var notice: @Sendable (String) -> Void
        public var renditionChosen: @Sendable (String) -> Void
        public init(notice: @escaping @Sendable (String) -> Void, renditionChosen: @escaping @Sendable (String) -> Void) {
            self.notice = notice
            self.renditionChosen = renditionChosen
        }
    }

    /// Every stream, each from the track that carries it (a separate audio rendition's audio wins).
    public var streams: [MediaKind: String?] {
        tracks.reversed().reduce(into: [:]) { streams, track in
            for (kind, codec) in track.streams where streams[kind] == nil { streams[kind] = codec }
        }
    }

    /// The track a stream comes from.
    public func track(of stream: MediaKind) -> Int? {
        tracks.indices.last { tracks[$0].streams[stream] != nil }
    }

    /// Throws `StartFailure` (or `CancellationError`). `historyWanted`: seconds of the live
    /// window to start back from, for a stage that holds history.
    public static func prepare(url: URL, rendition: RenditionRequest, wantVideo: Bool, historyWanted: Double?,
                               waitForLive: Bool, endAfter: Duration, fetcher: any HTTPGetting, reports: Reports) async throws -> HLSStart {
        let waiting = WaitingOn("the playlist \(url.absoluteString) to answer")
        // A start that hangs says on what, once; the request timeout ends it later.
        let announcing = Task {
            try await Task.sleep(for: .seconds(2))
            reports.notice("still connecting: waiting for \(waiting.what)")
        }
        defer { announcing.cancel() }
        let top = try await fetchTop(url, waitForLive: waitForLive, fetcher: fetcher, waiting: waiting, reports: reports)
        guard case .multivariant(let multivariant) = top.playlist else {
            // A media playlist: the fetch just made is its first read.
            let fetched = top.playlist.media.map { SegmentReader.Fetched(playlist: $0, sent: top.sent, received: top.received) }
            let track = try await prepareTrack(url, declared: nil, fetched: fetched, waiting: waiting, historyWanted: historyWanted,
                                               waitForLive: waitForLive, endAfter: endAfter, fetcher: fetcher)
            return HLSStart(tracks: [track], variants: [], variant: nil)
        }
        let choice = try HLSRenditions.choose(rendition, from: multivariant, wantVideo: wantVideo)
        var tracks: [HLSTrack] = []
        if wantVideo || choice.audioRendition == nil {
            reports.renditionChosen(HLSRenditions.describe(choice.variant))
            tracks.append(try await prepareTrack(choice.variant.uri, declared: HLSRenditions.streams(named: choice.variant.codecs), waiting: waiting,
                                                 historyWanted: historyWanted, waitForLive: waitForLive, endAfter: endAfter, fetcher: fetcher))
        }
        if let audio = choice.audioRendition, let uri = audio.uri {
            reports.renditionChosen("audio \(audio.name)")
            var track = try await prepareTrack(uri, declared: nil, waiting: waiting, historyWanted: historyWanted, waitForLive: waitForLive,
                                               endAfter: endAfter, fetcher: fetcher)
            track.streams = track.streams.filter { $0.key == .audio }
            tracks.append(track)
        }
        return HLSStart(tracks: tracks, variants: choice.adaptive ? multivariant.variants : [], variant: choice.variant)
    }

    /// A stream just gone live lists less than a player starts back by (three target durations,
    /// RFC 8216 §6.3.3): started at its edge, it would stall at every segment, each stall adding
    /// to how far behind live it plays. It is given the time to list that much, while it grows
    /// from its start (a window that slides is as long as it gets), four target durations at most.
    private static func filled(_ first: SegmentReader.Fetched, url: URL, reader: SegmentReader,
                               waiting: WaitingOn) async throws -> SegmentReader.Fetched {
        var fetched = first
        // At most four target durations, and a target duration of an hour waits no hour.
        let target = min(fetched.playlist.targetDuration, 10)
        let deadline = ContinuousClock.now + .seconds(4 * target)
        // Three segments is what a player starts back by when each falls a little short of the target.
        while fetched.playlist.isLive, fetched.playlist.segments.count < 3, fetched.playlist.duration < 3 * target - 0.001,
              fetched.playlist.mediaSequence == first.playlist.mediaSequence, ContinuousClock.now < deadline {
            waiting.what = "the stream just gone live to list \(Int(3 * target)) s, where a player starts"
            try await Task.sleep(for: .seconds(max(0.5, target / 2)))
            fetched = try await located { try await reader.fetchPlaylist(url) }
        }
        return fetched
    }

    /// A media playlist's track: fetched, waited for while it lists nothing (and, `waitForLive`,
    /// while a stream just gone live lists less than a player starts back by), its first segment read.
    private static func prepareTrack(_ url: URL, declared: [MediaKind: String?]?, fetched first: SegmentReader.Fetched? = nil, waiting: WaitingOn,
                                     historyWanted: Double?, waitForLive: Bool, endAfter: Duration,
                                     fetcher: any HTTPGetting) async throws -> HLSTrack {
        var options = SegmentReader.Options()
        options.endAfter = endAfter
        options.timeLiveEdge = historyWanted != nil
        let reader = SegmentReader(playlistURL: url, fetcher: fetcher, options: options)
        var fetched: SegmentReader.Fetched
        waiting.what = "the playlist \(url.absoluteString) to answer"
        if let first { fetched = first } else { fetched = try await located { try await reader.fetchPlaylist(url) } }
        // A live playlist that lists nothing yet is waited for, as a live stream that has not started.
        let waitingSince = ContinuousClock.now
        if fetched.playlist.segments.isEmpty { waiting.what = "the playlist \(url.absoluteString) to list a segment" }
        while fetched.playlist.segments.isEmpty {
            guard fetched.playlist.isLive, ContinuousClock.now - waitingSince < endAfter else {
                throw StartFailure("the playlist listed no segment within \(endAfter.configText) (the stream has not started)", badInput: true)
            }
            try await Task.sleep(for: .seconds(max(0.5, fetched.playlist.targetDuration / 2)))
            fetched = try await located { try await reader.fetchPlaylist(url) }
        }
        if waitForLive { fetched = try await filled(fetched, url: url, reader: reader, waiting: waiting) }
        let playlist = fetched.playlist
        if let key = playlist.segments.lazy.compactMap(\.key).first(where: { $0.method != .aes128 }) {
            let what = key.method == .sampleAES ? "SAMPLE-AES" : "\(key.method)"
            throw StartFailure("the segments are encrypted with \(what)\(key.keyFormat.map { " (\($0))" } ?? ""); castline plays clear and AES-128 segments only",
                               badInput: true)
        }
        guard let start = SegmentReader.start(in: playlist, back: historyWanted ?? 0),
              let segment = playlist.segments.first(where: { $0.sequence == start.sequence }) else {
            throw StartFailure("the playlist lists no segments", badInput: true)
        }
        waiting.what = "the first segment \(segment.uri.absoluteString) to arrive"
        let first = try await located { try await reader.fetchWhole(segment) }
        // What the segment holds is told by its bytes: a name can lie (MPEG-TS in files named .aac).
        let opening = [UInt8](first.prefix(4096))
        let container: HLSTrack.Container
        switch PackedAudio.sniff(opening) {
        case _ where segment.initSection != nil: container = .fragmentedMP4
        case .transportStream?: container = .transportStream
        case .packed(let codec)?: container = .packedAudio(codec)
        case nil:
            throw StartFailure("\(segment.uri.lastPathComponent): " + SegmentReader.notMedia(opening, segment: segment), badInput: true)
        }
        let head = container == .transportStream ? TransportStreamHead.read([UInt8](first)) : nil
        guard let streams = declared ?? HLSRenditions.streams(in: first, container: container, transportStream: head) else {
            throw StartFailure("cannot tell what \(segment.uri.lastPathComponent) holds (not MPEG-TS, fMP4 or packed audio)", badInput: true)
        }
        var firstPTS = head?.firstPTS ?? [:]
        // Packed audio is timed by its ID3 tag's transport stream timestamp, where it has one.
        if case .packedAudio = container, case .whole(_, let timestamp?) = PackedAudio.tag(opening) { firstPTS[.audio] = timestamp }
        return HLSTrack(reader: reader, playlist: playlist, fetchedAt: (fetched.sent, fetched.received), sequence: start.sequence,
                        startBack: start.startBack, first: first, container: container, streams: streams, firstPTS: firstPTS)
    }

    /// The playlist at `url` and when it was fetched (monotonic ns), waiting while it is not
    /// there yet (HTTP 404) when asked to.
    private static func fetchTop(_ url: URL, waitForLive: Bool, fetcher: any HTTPGetting, waiting: WaitingOn,
                                 reports: Reports) async throws -> (playlist: Playlist, sent: Int64, received: Int64) {
        var announced = false
        while true {
            do {
                let sent = MonotonicTime.now()
                let body = try await fetcher.data(url, limit: PlaylistParser.maxBytes)
                return (try PlaylistParser.parse(body, base: url), sent, MonotonicTime.now())
            } catch FetchError.http(status: 404, _) where waitForLive {
                if !announced {
                    waiting.what = "\(url.absoluteString) to go live"
                    reports.notice("waiting for \(url.absoluteString) to go live (HTTP 404); retrying every 2 s")
                    announced = true
                }
                try await Task.sleep(for: .seconds(2))
            } catch FetchError.http(status: 404, let missing) {
                throw StartFailure("the playlist is not there (HTTP 404 for \(missing)); if the stream is not live yet, add --wait-for-live (wait-for-live: true in a file)",
                                   badInput: true)
            } catch let error as FetchError {
                throw StartFailure("cannot fetch the playlist: \(error) (check the URL and the network)", badInput: !error.isTransient)
            } catch let error as PlaylistError {
                throw StartFailure("\(error)", badInput: true)
            }
        }
    }

    /// Runs `body`, turning what the HLS client throws into a start failure: bad input
    /// when the server said what it has is no playable stream, else trouble reaching it.
    private static func located<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StartFailure {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as FetchError {
            throw StartFailure("\(error)", badInput: !error.isTransient)
        } catch let error as SegmentReader.ReadFailure {
            throw StartFailure("\(error)", badInput: !error.isTransient)
        } catch {
            throw StartFailure("\(error)", badInput: true)
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
