import Foundation
import Timing
import Synchronization

/// Follows one media playlist (RFC 8216 §6.3): hands its segments over in
/// order from `start`, reloading a live playlist as §6.3.4 says (after a change
/// wait a target duration, else half of one), timing when new segments appear
/// for the live edge. Trouble is a state: failures are retried with backoff
/// and reported, never thrown; only cancellation ends `run` early.
public final class SegmentReader: Sendable {
    public struct Options: Sendable {
        /// A live playlist with no new segment for this long has ended.
        public var endAfter: Duration = .seconds(30)
        /// Poll finely until three new segments have been timed (for a live-edge estimate; see
        /// `LiveEdgeEstimator.timingPollInterval`).
        public var timeLiveEdge = false
        public var backoff = Backoff()
        /// Hands each segment's bytes on (`bytes`); a reader that only times its fetches (a load
        /// test's viewer) counts them and hands on none.
        public var deliversBytes = true
        public init() {}
    }

    /// Segments skipped in a row before the reader reports trouble (`reconnecting`).
    static let skipsBeforeTrouble = 3

    public let fetcher: any HTTPGetting
    public let options: Options
    private let state: Mutex<State>
    private let keys = KeyCache()

    private struct State {
        var playlistURL: URL
        var pendingSwitch: URL?
    }

    /// `playlistURL` is where `playlist` came from.
    public init(playlistURL: URL, fetcher: any HTTPGetting = HTTPFetcher.shared, options: Options = Options()) {
        self.fetcher = fetcher
        self.options = options
        state = Mutex(State(playlistURL: playlistURL))
    }

    /// Switches to another media playlist at the next segment boundary.
    public func switchPlaylist(to url: URL) {
        state.withLock { $0.pendingSwitch = url }
    }

    /// Where the reading is: the segment to read next and its place on the stream's time line,
    /// and the trouble met on the way (retried with backoff, never thrown).
    private struct Cursor {
        var next: Int
        /// Where segment `next` sits on the stream's time line (seconds from the start).
        var position = 0.0
        var prefetched: Data?
        var initSection: InitSection?
        var discontinuity = false
        var failures = 0
        /// The trouble is the playlist's: a reload that works again ends it (else a segment must).
        var playlistTrouble = false
        var skips = 0

        /// Moves past a segment read or skipped.
        mutating func passed(_ segment: Segment) {
            next += 1
            position += segment.duration
        }
    }

    /// Reads from segment `start` of `playlist` (fetched at `fetchedAt`, monotonic ns) until the
    /// end, handing over what it reads as the session's sequence. `first` is that segment's
    /// bytes when already fetched.
    public func session(playlist: MediaPlaylist, fetchedAt: (sent: Int64, received: Int64), start: Int,
                        first: Data? = nil) -> ReaderSession {
        ReaderSession { [self] deliver in
            if let end = await run(playlist: playlist, fetchedAt: fetchedAt, start: start, first: first, deliver: deliver) {
                await deliver(.ended(end))
            }
        }
    }

    /// Hands one output over; returns once it is taken.
    typealias Deliver = (ReaderOutput) async -> Void

    /// The reading itself: until the end (returned) or cancellation (nil).
    private func run(playlist initial: MediaPlaylist, fetchedAt: (sent: Int64, received: Int64), start: Int,
                     first: Data?, deliver: Deliver) async -> ReaderEnd? {
        var tracker = PlaylistTracker(Fetched(playlist: initial, sent: fetchedAt.sent, received: fetchedAt.received))
        var cursor = Cursor(next: start, prefetched: first)
        while !Task.isCancelled {
            await followSwitch(&tracker, &cursor, deliver: deliver)
            await catchUp(tracker.playlist, &cursor, deliver: deliver)
            if let segment = tracker.playlist.segments.first(where: { $0.sequence == cursor.next }) {
                guard await readNext(segment, &tracker, &cursor, deliver: deliver) else { return nil }
                continue
            }
            if !tracker.playlist.isLive { return cursor.next >= tracker.playlist.endSequence ? .endList : nil }
            switch tracker.quiet(endAfter: options.endAfter) {
            case .ended: return .noNewMedia(options.endAfter)
            case .overdue(let after): await deliver(.event(.waitingForMedia(after: after)))
            case .waitingOn: break
            }
            // Overdue is said when it is; whether the stream has ended is judged only after a reload
            // (fresh news), never between two.
            if let overdue = tracker.untilOverdue(), overdue < tracker.reloadWait(timingTheEdge: options.timeLiveEdge) {
                try? await Task.sleep(for: overdue)
                guard !Task.isCancelled else { return nil }
                if let after = tracker.sayOverdue() { await deliver(.event(.waitingForMedia(after: after))) }
            }
            try? await Task.sleep(for: tracker.reloadWait(timingTheEdge: options.timeLiveEdge))
            guard !Task.isCancelled else { return nil }
            guard await reload(&tracker, &cursor, start: start, deliver: deliver) else { return nil }
        }
        return nil
    }

    /// A rendition switch asked for: the new media playlist from the next segment on.
    private func followSwitch(_ tracker: inout PlaylistTracker, _ cursor: inout Cursor, deliver: Deliver) async {
        guard let url = state.withLock({ state -> URL? in defer { state.pendingSwitch = nil }; return state.pendingSwitch }),
              let switched = try? await fetchPlaylist(url) else { return }
        state.withLock { $0.playlistURL = url }
        tracker.switched(to: switched)
        cursor.discontinuity = true
        await deliver(.event(.switched(to: url)))
    }

    /// An outage longer than the window: what fell out of it is gone; playing on from a player's start.
    private func catchUp(_ playlist: MediaPlaylist, _ cursor: inout Cursor, deliver: Deliver) async {
        guard cursor.next < playlist.mediaSequence, let oldest = playlist.segments.first else { return }
        let resume = Self.playerStart(in: playlist) ?? oldest.sequence
        let lost = Double(playlist.mediaSequence - cursor.next) * playlist.targetDuration
            + playlist.segments.prefix { $0.sequence < resume }.reduce(0) { $0 + $1.duration }
        await deliver(.event(.lost(seconds: lost)))
        cursor.position += lost
        cursor.next = resume
        cursor.discontinuity = true
    }

    /// Reads one segment and moves on, skips it, or waits to retry it; false once cancelled.
    private func readNext(_ segment: Segment, _ tracker: inout PlaylistTracker, _ cursor: inout Cursor,
                          deliver: Deliver) async -> Bool {
        let outcome = await read(segment, position: cursor.position, prefetched: cursor.prefetched, discontinuity: cursor.discontinuity,
                                 live: tracker.playlist.isLive, initSection: &cursor.initSection, deliver: deliver)
        cursor.prefetched = nil
        switch outcome {
        case .read:
            // Media came: `endAfter` counts from here, so time spent held back (a paused
            // pipeline) is not taken for a stream that stopped.
            if tracker.mediaCame() { await deliver(.event(.mediaResumed)) }
            if cursor.failures > 0 { await deliver(.event(.reconnected(attempts: cursor.failures))) }
            (cursor.failures, cursor.skips, cursor.discontinuity) = (0, 0, false)
            cursor.passed(segment)
        case .skip(let reason):
            await deliver(.event(.skipped(sequence: segment.sequence, reason: reason)))
            cursor.discontinuity = true
            cursor.passed(segment)
            cursor.skips += 1
            // Several in a row is no bad segment but trouble at the far end.
            if cursor.skips >= Self.skipsBeforeTrouble {
                cursor.failures += 1
                cursor.playlistTrouble = false
                return await wait(retry: cursor.failures, reason: reason, deliver: deliver)
            }
        case .retry(let reason):
            cursor.failures += 1
            cursor.playlistTrouble = false
            guard await wait(retry: cursor.failures, reason: reason, deliver: deliver) else { return false }
            // Reload: the segment may have left the window meanwhile.
            if let again = try? await fetchPlaylist(currentURL) { tracker.refreshed(again) }
        case .cancelled:
            return false
        }
        return true
    }

    /// Reloads a live playlist, timing the live edge from `start`; false once cancelled.
    private func reload(_ tracker: inout PlaylistTracker, _ cursor: inout Cursor, start: Int,
                        deliver: Deliver) async -> Bool {
        do {
            let timed = tracker.reloaded(try await fetchPlaylist(currentURL))
            if cursor.failures > 0, cursor.playlistTrouble {
                await deliver(.event(.reconnected(attempts: cursor.failures)))
                cursor.failures = 0
            }
            if timed, let edge = tracker.edge(from: start) { await deliver(.event(.liveEdge(edge, reference: start))) }
        } catch {
            cursor.failures += 1
            cursor.playlistTrouble = true
            guard await wait(retry: cursor.failures, reason: "\(error)", deliver: deliver) else { return false }
            // Trouble is not the stream ending: the clock for `endAfter` starts again when it is back.
            tracker.troublePassed()
        }
        return true
    }

    /// Where a player starts in a live playlist: three target durations from its end
    /// (§6.3.3), on a segment boundary; nil for an empty one.
    public static func playerStart(in playlist: MediaPlaylist) -> Int? {
        guard !playlist.segments.isEmpty else { return nil }
        guard playlist.isLive else { return playlist.mediaSequence }
        var held = 0.0
        var index = playlist.segments.count
        while index > 0, held < 3 * playlist.targetDuration - 0.001 {
            index -= 1
            held += playlist.segments[index].duration
        }
        return playlist.segments[index].sequence
    }

    /// The segment to start from so that `back` seconds more than a player holds are there;
    /// and how many seconds earlier than a player's start that is.
    public static func start(in playlist: MediaPlaylist, back: Double) -> (sequence: Int, startBack: Double)? {
        guard let player = playerStart(in: playlist) else { return nil }
        guard playlist.isLive, back > 0 else { return (player, 0) }
        var index = player - playlist.mediaSequence
        var gained = 0.0
        while index > 0, gained < back - 0.001 {
            index -= 1
            gained += playlist.segments[index].duration
        }
        return (playlist.segments[index].sequence, gained)
    }

    private var currentURL: URL { state.withLock(\.playlistURL) }

    /// One segment's clear bytes, whole (its init section first), as `run` would hand them over;
    /// for a look at its head before anything is built.
    public func fetchWhole(_ segment: Segment) async throws -> Data {
        var whole = Data()
        var initSection: InitSection?
        let outcome = await read(segment, position: 0, prefetched: nil, discontinuity: false, live: false, initSection: &initSection) {
            if case .bytes(let bytes) = $0 { whole.append(bytes) }
        }
        switch outcome {
        case .read: return whole
        case .skip(let reason): throw ReadFailure(sequence: segment.sequence, reason: reason, isTransient: false)
        case .retry(let reason): throw ReadFailure(sequence: segment.sequence, reason: reason, isTransient: true)
        case .cancelled: throw CancellationError()
        }
    }

    public struct ReadFailure: Error, CustomStringConvertible {
        public var sequence: Int
        public var reason: String
        /// Network trouble, worth retrying (else the segment itself is bad).
        public var isTransient: Bool
        public var description: String { "segment \(sequence): \(reason)" }
    }

    /// Reports trouble and waits out the backoff; false when cancelled meanwhile.
    private func wait(retry attempt: Int, reason: String, deliver: Deliver) async -> Bool {
        let delay = options.backoff.delay(attempt: attempt, random: Double.random(in: 0..<1))
        await deliver(.event(.reconnecting(reason: reason, attempt: attempt, retryIn: delay)))
        try? await Task.sleep(for: delay)
        return !Task.isCancelled
    }

    /// A media playlist and when it was fetched (monotonic ns), for the live edge.
    public struct Fetched: Sendable {
        public var playlist: MediaPlaylist
        public var sent: Int64
        public var received: Int64

        public init(playlist: MediaPlaylist, sent: Int64, received: Int64) {
            self.playlist = playlist
            self.sent = sent
            self.received = received
        }
    }

    /// Fetches and parses a media playlist, timed for the live edge.
    public func fetchPlaylist(_ url: URL) async throws -> Fetched {
        let sent = MonotonicTime.now()
        let body = try await fetcher.data(url, limit: PlaylistParser.maxBytes)
        let received = MonotonicTime.now()
        guard case .media(let playlist) = try PlaylistParser.parse(body, base: url) else {
            throw PlaylistError.malformed("\(url.absoluteString) is a multivariant playlist where a media playlist was expected")
        }
        return Fetched(playlist: playlist, sent: sent, received: received)
    }

    private enum Outcome {
        case read, skip(String), retry(String), cancelled
    }

    /// How often a byte range a live server cannot serve yet (HTTP 416) is asked for again, 250 ms apart.
    static let unsatisfiedRetries = 8

    /// One segment, streamed to whoever takes it. Nothing handed over yet: a transient failure is retried.
    /// `live`: the playlist is live, so a range past the end of its file may be there in a moment.
    private func read(_ segment: Segment, position: Double, prefetched: Data?, discontinuity: Bool, live: Bool,
                      initSection: inout InitSection?, deliver: Deliver) async -> Outcome {
        let began = ContinuousClock.now
        var decryptor: SegmentDecryptor?
        var delivered = 0
        do {
            // Prefetched bytes are clear already.
            if let key = segment.key, prefetched == nil {
                guard key.method == .aes128, let uri = key.uri else {
                    return .skip("encrypted with a method castline cannot play")
                }
                let keyBytes = try await keys.key(uri, fetcher: fetcher)
                decryptor = try SegmentDecryptor(key: keyBytes, iv: key.iv ?? SegmentDecryptor.iv(sequence: segment.sequence))
            }
            await deliver(.segmentStarts(segment, position: position, discontinuity: discontinuity || segment.discontinuity))
            if prefetched != nil { initSection = segment.initSection }  // the prefetched bytes hold it
            if let map = segment.initSection, map != initSection {
                let head = try await fetcher.data(map.uri, range: map.byteRange)
                var clear = head
                if var mapDecryptor = decryptor { clear = try mapDecryptor.update(head) + mapDecryptor.finish() }
                await deliver(.bytes(clear))
                initSection = map
            }
            var unsatisfied = 0
            while true {
                let chunks: AsyncThrowingStream<Data, any Error>
                if let prefetched {
                    chunks = AsyncThrowingStream { $0.yield(prefetched); $0.finish() }
                } else {
                    chunks = fetcher.stream(segment.uri, range: segment.byteRange)
                }
                do {
                    for try await chunk in chunks {
                        let clear = try decryptor?.update(chunk) ?? chunk
                        if delivered == 0, !clear.isEmpty, let refusal = Self.refusal(clear, segment: segment) { return .skip(refusal) }
                        delivered += clear.count
                        if !clear.isEmpty, options.deliversBytes { await deliver(.bytes(clear)) }
                    }
                    break
                } catch FetchError.http(status: 416, _) where live && delivered == 0 && unsatisfied < Self.unsatisfiedRetries {
                    // A live server writing one growing file (ffmpeg's single_file) lists a byte range
                    // a moment before its bytes are in the file: asked again shortly, it has them.
                    unsatisfied += 1
                    try await Task.sleep(for: .milliseconds(250))
                }
            }
            if let tail = try decryptor?.finish(), !tail.isEmpty { await deliver(.bytes(tail)) }
        } catch let error as FetchError {
            if error == .cancelled || Task.isCancelled { return .cancelled }
            if delivered > 0 { return .skip("cut off: \(error)") }
            return error.isTransient ? .retry("\(error)") : .skip("\(error)")
        } catch {
            if Task.isCancelled { return .cancelled }
            return .skip("\(error)")
        }
        let seconds = (ContinuousClock.now - began) / .seconds(1)
        await deliver(.segmentEnds(segment, fetch: SegmentFetch(bytes: delivered, seconds: seconds)))
        return .read
    }

    /// Why the first clear bytes of a segment cannot be media castline reads; nil when they can.
    /// By the bytes, not the name: MPEG-TS's sync byte, or packed audio's ID3 tag or frame sync.
    static func refusal(_ head: Data, segment: Segment) -> String? {
        guard segment.initSection == nil, let first = head.first else { return nil }
        guard ![0x47, 0x49, 0xFF, 0x0B].contains(first) else { return nil }
        return notMedia(head, segment: segment)
    }

    /// What bytes that are none of the containers castline reads are said to be. Decrypted with
    /// the wrong key any segment reads as noise, so for AES-128 the key is named as the likely fault.
    static func notMedia(_ head: some Collection<UInt8>, segment: Segment) -> String {
        let starts = head.prefix(4).map { String(format: "%02x", $0) }.joined()
        guard let key = segment.key, key.method == .aes128 else {
            return "not MPEG-TS, fMP4 or packed audio (it starts with \(starts))"
        }
        return "decrypted with the key from \(key.uri?.absoluteString ?? "its EXT-X-KEY"), it is not MPEG-TS, fMP4 or packed audio "
            + "(it starts with \(starts)): the key (or its IV) is probably wrong"
    }
}

/// AES-128 keys, fetched once per URI.
final class KeyCache: Sendable {
    private let keys = Mutex<[URL: [UInt8]]>([:])

    func key(_ uri: URL, fetcher: any HTTPGetting) async throws -> [UInt8] {
        if let known = keys.withLock({ $0[uri] }) { return known }
        let key = [UInt8](try await fetcher.data(uri, limit: 1024))
        keys.withLock { $0[uri] = key }
        return key
    }
}
