import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GstKit
import Synchronization

/// Tells a delay stage where the live edge of a live HLS stream is, so its
/// play-out is counted from the edge rather than from when this process started
/// (hlsdemux2's own playlist refreshes are phase-locked to its start, so they
/// carry that start too).
///
/// Once a stage asks for history, the media playlist is polled every 50 ms
/// until three new segments have been timed
/// (`LiveEdgeEstimator`). That timing is put on hlsdemux2's time line: its
/// stream time 0 is the first segment of the first playlist it read (the one
/// the decoder's HTTP source fetched, read here as it passes), and its
/// timestamps are stream time plus the segment's start minus its time. Each
/// estimate goes down every outlet as a `HistoryHandshake.liveEdge` event.
///
/// Only for a media playlist (a chosen rendition): with a master playlist
/// hlsdemux2 fetches the media playlist itself, unseen, so there is no estimate.
final class LiveEdgeWatch: Sendable {
    static let pollEvery: Duration = .milliseconds(50)
    /// Appearances timed before polling stops (more narrow the estimate little).
    static let appearancesWanted = 3
    /// Polls that fail in a row before giving up.
    static let failuresAllowed = 20

    private struct State {
        /// The media playlist to poll; nil: no estimate for this stream.
        var url: URL?
        var polling = false
        var estimator = LiveEdgeEstimator()
        /// hlsdemux2's first playlist: its first segment (stream time 0) and target duration.
        var reference: (sequence: Int, targetDuration: Double)?
        var decoderSeen = false
        /// Stream PTS minus stream time, from the first time segment on an outlet.
        var ptsOffset: Int64?
        /// The newest estimate and how many have been made; each outlet sends each once.
        var edge: HistoryHandshake.LiveEdge?
        var edgeVersion = 0
    }

    private let state = Mutex(State())

    /// The media playlist this stream plays (live), and castline's own fetch of it, timed.
    func poll(_ url: URL, fetched media: HLSPlaylist.Media, sent: Int64, received: Int64) {
        state.withLock { state in
            state.url = url
            Self.observe(&state, media, sent: sent, received: received)
        }
    }

    /// A playlist fetched before the polls: timed like one (a segment listed after it, even by
    /// the first poll, is an appearance; else it is lost and start-up waits a segment longer).
    private static func observe(_ state: inout State, _ media: HLSPlaylist.Media, sent: Int64, received: Int64) {
        let durations = media.segmentDurations
        if state.polling {
            state.estimator.learn(mediaSequence: media.mediaSequence, durations: durations)
        } else {
            state.estimator.record(.init(mediaSequence: media.mediaSequence, durations: durations, sent: sent, received: received))
        }
    }

    /// The first decoder: its HTTP source's download is the playlist hlsdemux2 starts from.
    func decoderMade(_ decoder: Element) {
        guard state.withLock({ state in defer { state.decoderSeen = true }; return !state.decoderSeen }) else { return }
        try? decoder.connect("source-setup") { [weak self] argument in
            guard case .element(let source) = argument, let pad = source.staticPad("src") else { return }
            self?.readFirstPlaylist(at: pad)
        }
    }

    private func readFirstPlaylist(at pad: Pad) {
        // Timed like a poll: from the source's setup (before its request) to its first bytes.
        let setup = MonotonicTime.now()
        let read = Mutex((bytes: Data(), answered: Int64?.none))
        pad.addProbe([.buffer, .eventDownstream]) { [weak self] info in
            if let buffer = info.buffer {
                let now = MonotonicTime.now()
                buffer.withUnsafeBytes { raw in
                    read.withLock { read in
                        read.bytes.append(contentsOf: raw)
                        if read.answered == nil { read.answered = now }
                    }
                }
            } else if info.event?.kind == .eos, let self {
                let (bytes, answered) = read.withLock { $0 }
                self.firstPlaylist(bytes, sent: setup, received: answered ?? MonotonicTime.now())
                return .remove
            }
            return .ok
        }
    }

    private func firstPlaylist(_ data: Data, sent: Int64, received: Int64) {
        guard let text = String(data: data, encoding: .utf8),
              case .media(let media)? = try? HLSPlaylist.parse(text, base: URL(fileURLWithPath: "/")) else { return }
        let changed = state.withLock { state -> Bool in
            guard state.reference == nil else { return false }
            state.reference = (media.mediaSequence, media.targetDuration)
            Self.observe(&state, media, sent: sent, received: received)
            return true
        }
        if changed { updateEdge() }
    }

    /// A stage wants history: time the playlist (once).
    func start() {
        guard let url = state.withLock({ state -> URL? in
            guard let url = state.url, !state.polling else { return nil }
            state.polling = true
            return url
        }) else { return }
        Task.detached { [weak self] in
            let session = URLSession(configuration: .ephemeral)
            defer { session.invalidateAndCancel() }
            var poller = Poller(url: url)
            // Ends with the source (never holding it across a wait), once enough is timed,
            // when the stream ends, or when the playlist keeps failing.
            while self?.wantsMore == true, !poller.ended, poller.failures <= Self.failuresAllowed {
                if let poll = await poller.next(session) { self?.record(poll) }
                try? await Task.sleep(for: Self.pollEvery)
            }
        }
    }

    private var wantsMore: Bool { state.withLock { $0.estimator.appearances.count < Self.appearancesWanted } }

    private func record(_ poll: LiveEdgeEstimator.Poll) {
        if state.withLock({ $0.estimator.record(poll) }) { updateEdge() }
    }

    /// Makes a new estimate when everything it needs is known.
    private func updateEdge() {
        state.withLock { state in
            guard let reference = state.reference, let offset = state.ptsOffset,
                  let edge = state.estimator.edge(from: reference.sequence) else { return }
            let pts = Int64(clamping: edge.streamTime) + offset
            guard pts >= 0 else { return }
            // Where hlsdemux2 starts a live stream, and where a player plays it.
            let holdBack = UInt64(max(0, reference.targetDuration * 3) * 1e9)
            state.edge = .init(pts: UInt64(pts), at: edge.at, holdBack: holdBack)
            state.edgeVersion += 1
        }
    }

    /// Watches the pad a stream leaves the source through (before `HLSStartBack`, which
    /// keeps the stage's request): starts polling on that request, learns the time line
    /// from the stream's segment, and sends each new estimate down before a buffer.
    func watch(_ pad: Pad) {
        let sent = Mutex(0)
        pad.addProbe([.buffer, .eventDownstream, .eventUpstream]) { [weak self] info in
            guard let self else { return .ok }
            if let event = info.event {
                if HistoryHandshake.wantedInitial(event) != nil {
                    self.start()
                } else if event.kind == .segment, let segment = event.segment, segment.isTimeFormat,
                   let start = segment.start?.nanoseconds {
                    let first = self.state.withLock { state -> Bool in
                        guard state.ptsOffset == nil else { return false }
                        state.ptsOffset = Int64(clamping: start) - Int64(clamping: segment.time?.nanoseconds ?? 0)
                        return true
                    }
                    if first { self.updateEdge() }
                }
                return .ok
            }
            let pending = self.state.withLock { state in state.edge.map { (state.edgeVersion, $0) } }
            if let (version, edge) = pending, sent.withLock({ $0 }) < version, let event = HistoryHandshake.liveEdge(edge) {
                sent.withLock { $0 = version }
                info.pad?.pushEvent(event)
            }
            return .ok
        }
    }
}

/// GETs of one media playlist, each timed (see `HLSFetcher` for why never conditional).
private struct Poller {
    let url: URL
    var failures = 0
    /// The playlist says the stream has ended: there is no live edge.
    var ended = false

    init(url: URL) {
        self.url = url
    }

    /// One poll; nil when it failed.
    mutating func next(_ session: URLSession) async -> LiveEdgeEstimator.Poll? {
        let sent = MonotonicTime.now()
        let text = try? await HLSFetcher.fetch(url, timeout: .seconds(5), session: session)
        let received = MonotonicTime.now()
        var poll: LiveEdgeEstimator.Poll?
        if let text, case .media(let media)? = try? HLSPlaylist.parse(text, base: url) {
            ended = media.isEnded
            poll = .init(mediaSequence: media.mediaSequence, durations: media.segmentDurations, sent: sent, received: received)
        }
        failures = poll == nil ? failures + 1 : 0
        return ended ? nil : poll
    }
}
