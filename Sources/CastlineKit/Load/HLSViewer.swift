import Foundation
import HLS
import HTTPClient

/// One simulated viewer of an HLS stream: its own connections, the playlist followed and its
/// segments fetched as a player's loader does (from 3 segments behind a live edge; no further
/// than `maxBuffer` ahead of the play-out), nothing decoded. What it sees goes to its slot in
/// the tally: its buffer (first frame, stalls), each fetch, each HTTP error.
public struct HLSViewer: Sendable {
    let number: Int
    let url: URL
    let tally: LoadTally
    let timeout: Duration

    public init(number: Int, url: URL, tally: LoadTally, timeout: Duration) {
        (self.number, self.url, self.tally, self.timeout) = (number, url, tally, timeout)
    }
    /// How far a player fetches ahead of what it plays (hls.js's `maxBufferLength`).
    static let maxBuffer = 30.0

    public func run() async {
        let began = ContinuousClock.now
        tally.started(number, at: began)
        let fetcher = HTTPFetcher(idleTimeout: timeout)
        let start: (reader: SegmentReader, fetched: SegmentReader.Fetched)
        do {
            start = try await Self.open(url, fetcher: fetcher)
        } catch {
            return tally.failed(number, reason: "\(error)", status: (error as? FetchError).flatMap(Self.status))
        }
        let playlist = start.fetched.playlist
        let first = playlist.isLive ? max(playlist.mediaSequence, playlist.endSequence - 3) : playlist.mediaSequence
        let session = start.reader.session(playlist: playlist, fetchedAt: (start.fetched.sent, start.fetched.received), start: first)
        var buffer = ViewerBuffer(resumeAhead: playlist.targetDuration)
        func elapsed() -> Double { (ContinuousClock.now - began).seconds }
        await withTaskCancellationHandler {
            reading: for await output in session {
                switch output {
                case .segmentEnds(let segment, let fetch):
                    buffer.segmentFetched(duration: segment.duration, at: elapsed())
                    tally.fetched(number, buffer: buffer, seconds: fetch.seconds, bytes: fetch.bytes)
                    // A player stops fetching while its buffer is full; the reading waits with it.
                    while buffer.ahead > Self.maxBuffer, (try? await Task.sleep(for: .seconds(buffer.ahead - Self.maxBuffer))) != nil {
                        buffer.advance(to: elapsed())
                    }
                case .event(.reconnecting(let reason, _, _)), .event(.skipped(_, let reason)):
                    tally.trouble(number, status: Self.status(in: reason))
                case .ended:
                    break reading
                default:
                    continue
                }
            }
        } onCancel: {
            session.stop()
        }
        tally.finished(number)
    }

    /// The media playlist to follow: `url` itself, or a multivariant playlist's first variant
    /// (where hls.js starts before it has measured anything).
    private static func open(_ url: URL, fetcher: HTTPFetcher) async throws -> (SegmentReader, SegmentReader.Fetched) {
        let sent = MonotonicTime.now()
        let body = try await fetcher.data(url, limit: PlaylistParser.maxBytes)
        let received = MonotonicTime.now()
        switch try PlaylistParser.parse(body, base: url) {
        case .media(let playlist):
            return (SegmentReader(playlistURL: url, fetcher: fetcher), SegmentReader.Fetched(playlist: playlist, sent: sent, received: received))
        case .multivariant(let main):
            guard let variant = main.variants.first else { throw PlaylistError.malformed("\(url.absoluteString) lists no variant") }
            let reader = SegmentReader(playlistURL: variant.uri, fetcher: fetcher)
            return (reader, try await reader.fetchPlaylist(variant.uri))
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
