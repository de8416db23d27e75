import Foundation
import Timing

/// A media playlist as a player follows it (RFC 8216 §6.3.4): each reload numbered on from
/// the one before, when a live playlist last brought a new segment, how long to wait before
/// the next reload, and the live edge timed from when new segments appear.
struct PlaylistTracker {
    private(set) var playlist: MediaPlaylist
    /// The EXT-X-MEDIA-SEQUENCE the server gave last (`playlist` may be renumbered from it).
    private var declared: Int
    private var estimator = LiveEdgeEstimator()
    /// The last reload changed the playlist (the next waits a whole target duration).
    private var changed = true
    /// When a new segment was last listed or read; `endAfter` counts from here.
    private(set) var lastNewSegment = ContinuousClock.now
    /// `waitingForMedia` was said, and no segment has come since.
    private(set) var waiting = false
    /// When the last load of the playlist came (monotonic ns): the next reload's wait counts from there.
    private var loaded: Int64

    init(_ fetched: SegmentReader.Fetched) {
        playlist = fetched.playlist
        declared = fetched.playlist.mediaSequence
        loaded = fetched.received
        time(fetched)
    }

    /// Another media playlist (a rendition switch): numbered afresh, timed afresh.
    mutating func switched(to fetched: SegmentReader.Fetched) {
        loaded = fetched.received
        playlist = fetched.playlist
        declared = fetched.playlist.mediaSequence
        estimator = LiveEdgeEstimator()
    }

    /// A reload of the same playlist; true when it timed a new appearance (see `edge(from:)`).
    mutating func reloaded(_ fetched: SegmentReader.Fetched) -> Bool {
        let new = fetched.playlist.renumbered(after: playlist, declared: declared)
        declared = fetched.playlist.mediaSequence
        changed = new.endSequence != playlist.endSequence || new.isEnded != playlist.isEnded
        loaded = fetched.received
        if new.endSequence > playlist.endSequence { lastNewSegment = .now }
        playlist = new
        return time(fetched)
    }

    /// A reload after trouble, only to see whether the segment wanted is still listed.
    mutating func refreshed(_ fetched: SegmentReader.Fetched) {
        playlist = fetched.playlist.renumbered(after: playlist, declared: declared)
        declared = fetched.playlist.mediaSequence
    }

    /// Media came (or trouble passed, which is not the stream ending): `endAfter` counts from now.
    /// True when `waitingForMedia` had been said.
    mutating func mediaCame() -> Bool {
        lastNewSegment = .now
        defer { waiting = false }
        return waiting
    }

    mutating func troublePassed() { lastNewSegment = .now }

    /// With nothing to read: `.ended` once no new segment came for `endAfter`; `.overdue` once, when
    /// the next is 1.5 target durations late (said at once, not only when `endAfter` runs out).
    enum Quiet { case ended, overdue(Duration), waitingOn }
    mutating func quiet(endAfter: Duration) -> Quiet {
        if ContinuousClock.now - lastNewSegment > endAfter { return .ended }
        return sayOverdue().map { .overdue($0) } ?? .waitingOn
    }

    /// The quiet has become overdue and was not said yet: said now (how long counts as overdue).
    mutating func sayOverdue() -> Duration? {
        guard !waiting, ContinuousClock.now - lastNewSegment > overdue else { return nil }
        waiting = true
        return overdue
    }

    /// No new segment for this long is overdue: 1.5 target durations.
    private var overdue: Duration { .seconds(1.5 * max(0.1, playlist.targetDuration)) }

    /// How long until the quiet is overdue (so it is said then, not at the next reload); nil once said.
    func untilOverdue() -> Duration? {
        guard !waiting else { return nil }
        return max(.zero, lastNewSegment + overdue - .now) + .milliseconds(1)
    }

    /// How long to wait before the next reload: §6.3.4, a target duration after a change and half
    /// of one after none, counted from when the last load came (at least what the RFC asks, which
    /// counts from when it began; after a segment slower than that, none: the reload is due); finer
    /// while the live edge is being timed.
    func reloadWait(timingTheEdge: Bool) -> Duration {
        let now = MonotonicTime.now()
        if timingTheEdge && estimator.isTiming { return .nanoseconds(estimator.timingPollInterval(now: now)) }
        let interval = Duration.seconds(max(0.1, playlist.targetDuration) * (changed ? 1 : 0.5))
        return max(.zero, interval - .nanoseconds(now - loaded))
    }

    /// The live edge in the stream's time from segment `reference`, once timed.
    func edge(from reference: Int) -> LiveEdgeEstimator.Edge? { estimator.edge(from: reference) }

    @discardableResult
    private mutating func time(_ fetched: SegmentReader.Fetched) -> Bool {
        estimator.record(.init(mediaSequence: fetched.playlist.mediaSequence, durations: fetched.playlist.segments.map(\.duration),
                               sent: fetched.sent, received: fetched.received))
    }
}
