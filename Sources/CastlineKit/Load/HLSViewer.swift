import Foundation
import HLS
import HTTPClient
import GLibSupport

/// One simulated viewer of an HLS stream: its own connections, the playlist followed and its
/// segments fetched as a player's loader does (from 3 segments behind a live edge; no further
/// than `maxBuffer` ahead of the play-out), nothing decoded; with `rendition: auto`, the variant
/// moved to what its measured throughput carries after each segment, as `listen` does. What it
/// sees goes to its slot in the tally: its buffer (first frame, stalls), each fetch, each HTTP
/// error, its rendition.
public struct HLSViewer: Sendable {
    let number: Int
    let url: URL
    let rendition: RenditionRequest
    let tally: LoadTally
    let timeout: Duration

    /// `rendition` as `listen --rendition` takes it: auto, best, lowest, a bitrate (800k), a name or resolution (720p).
    public init(number: Int, url: URL, rendition: String = "auto", tally: LoadTally, timeout: Duration) {
        (self.number, self.url, self.rendition, self.tally, self.timeout) = (number, url, HLSSource.request(rendition), tally, timeout)
    }
    /// How far a player fetches ahead of what it plays (hls.js's `maxBufferLength`).
    static let maxBuffer = 30.0

    public func run() async {
        let began = ContinuousClock.now
        tally.started(number, at: began)
        let fetcher = EventLoopFetcher(idleTimeout: timeout)
        let start: Start
        do {
            start = try await Self.open(url, rendition: rendition, fetcher: fetcher)
        } catch {
            let fetch = error as? FetchError
            return tally.failed(number, reason: "\(error)", httpError: fetch != nil, status: fetch.flatMap(Self.status))
        }
        if let variant = start.variant { tally.rendition(number, HLSRenditions.describe(variant), switched: false) }
        let playlist = start.fetched.playlist
        let joint = Protected(TrackedBuffer(tracks: 1 + start.audio.count, resumeAhead: playlist.targetDuration))
        let abr = Protected((throughput: ThroughputEstimate(), current: start.variant?.uri))
        let tracks = [(start.reader, start.fetched)] + start.audio.map { ($0.reader, $0.fetched) }
        let sessions = tracks.map { reader, fetched in
            let playlist = fetched.playlist
            let first = playlist.isLive ? max(playlist.mediaSequence, playlist.endSequence - 3) : playlist.mediaSequence
            return reader.session(playlist: playlist, fetchedAt: (fetched.sent, fetched.received), start: first)
        }
        func elapsed() -> Double { (ContinuousClock.now - began).seconds }
        await withTaskCancellationHandler {
            // Each track read on its own, as a player's loaders do; the first to end ends the viewer.
            await withTaskGroup(of: Void.self) { group in
                for (track, session) in sessions.enumerated() {
                    group.addTask { [self] in
                        reading: for await output in session {
                            switch output {
                            case .segmentEnds(let segment, let fetch):
                                // Told to the tally under the lock: the two tracks' buffers reach it in the order they were made.
                                joint.withLock {
                                    $0.segmentFetched(track: track, duration: segment.duration, at: elapsed(),
                                                      programDateTime: segment.programDateTime)
                                    tally.fetched(number, buffer: $0.buffer, seconds: fetch.seconds, bytes: fetch.bytes)
                                }
                                if track == 0 { adapt(start, abr, fetch: fetch) }
                                // A player stops fetching while its buffer is full; the reading waits with it.
                                while case let ahead = joint.withLock({ $0.ahead(of: track) }), ahead > Self.maxBuffer,
                                      (try? await Task.sleep(for: .seconds(ahead - Self.maxBuffer))) != nil {
                                    joint.withLock { $0.advance(to: elapsed()) }
                                }
                            case .event(.reconnecting(let reason, _, _)), .event(.skipped(_, let reason)):
                                tally.trouble(number, status: Self.status(in: reason), reason: reason)
                            case .ended:
                                break reading
                            default:
                                continue
                            }
                        }
                    }
                }
                await group.next()
                for session in sessions { session.stop() }
                group.cancelAll()
            }
        } onCancel: {
            for session in sessions { session.stop() }
        }
        tally.finished(number)
    }

    /// After each segment of the variant: its throughput measured, and with `rendition: auto` the
    /// variant that throughput carries chosen.
    private func adapt(_ start: Start, _ abr: Protected<(throughput: ThroughputEstimate, current: URL?)>, fetch: SegmentFetch) {
        let next = abr.withLock { state -> MultivariantPlaylist.Variant? in
            state.throughput.segmentFetched(bytes: fetch.bytes, seconds: fetch.seconds)
            guard let rate = state.throughput.bitsPerSecond, let next = start.abr?.move(from: state.current, throughput: rate) else { return nil }
            state.current = next.uri
            return next
        }
        guard let next else { return }
        start.reader.switchPlaylist(to: next.uri)
        tally.rendition(number, HLSRenditions.describe(next), switched: true)
    }

    /// Nothing is decoded: the reader times each segment's fetch and hands no bytes on.
    static let readerOptions = {
        var options = SegmentReader.Options()
        options.deliversBytes = false
        return options
    }()

    struct Start {
        var reader: SegmentReader
        var fetched: SegmentReader.Fetched
        /// The variant followed, and what adapts across them (`rendition: auto` with several).
        var variant: MultivariantPlaylist.Variant?
        var abr: ABRController?
        /// The variant's `EXT-X-MEDIA` audio rendition, read beside it.
        var audio: [(reader: SegmentReader, fetched: SegmentReader.Fetched)] = []
    }

    /// The media playlist to follow: `url` itself, or the variant of a multivariant playlist that
    /// `rendition` chooses (auto: the first listed, where hls.js starts before it has measured anything).
    private static func open(_ url: URL, rendition: RenditionRequest, fetcher: any HTTPGetting) async throws -> Start {
        let sent = MonotonicTime.now()
        let body = try await fetcher.data(url, limit: PlaylistParser.maxBytes)
        let received = MonotonicTime.now()
        switch try PlaylistParser.parse(body, base: url) {
        case .media(let playlist):
            return Start(reader: SegmentReader(playlistURL: url, fetcher: fetcher, options: Self.readerOptions), fetched: SegmentReader.Fetched(playlist: playlist, sent: sent, received: received))
        case .multivariant(let main):
            let choice = try HLSRenditions.choose(rendition, from: main, wantVideo: true)
            let reader = SegmentReader(playlistURL: choice.variant.uri, fetcher: fetcher, options: Self.readerOptions)
            var start = Start(reader: reader, fetched: try await reader.fetchPlaylist(choice.variant.uri), variant: choice.variant,
                              abr: choice.adaptive ? ABRController(variants: main.variants) : nil)
            if let audio = choice.audioRendition?.uri {
                let audioReader = SegmentReader(playlistURL: audio, fetcher: fetcher, options: Self.readerOptions)
                start.audio = [(audioReader, try await audioReader.fetchPlaylist(audio))]
            }
            return start
        }
    }

    static func status(_ error: FetchError) -> Int? {
        if case .http(let status, _) = error { return status }
        return nil
    }

    /// The HTTP status a reader's trouble names ("… HTTP 404 …"), if any.
    static func status(in reason: String) -> Int? {
        reason.firstMatch(of: /HTTP (\d{3})/).flatMap { Int($0.output.1) }
    }
}
