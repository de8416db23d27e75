import Foundation

/// What a reader tells its consumer besides the bytes.
public enum ReaderEvent: Sendable, Equatable {
    /// The playlist or its segments cannot be fetched; retrying in `retryIn`.
    case reconnecting(reason: String, attempt: Int, retryIn: Duration)
    case reconnected(attempts: Int)
    /// A segment could not be played and was left out.
    case skipped(sequence: Int, reason: String)
    /// Media was lost: the reader fell out of the live window (an outage longer than it).
    case lost(seconds: Double)
    /// A new estimate of the live edge, counted from the start of segment `reference`.
    case liveEdge(LiveEdgeEstimator.Edge, reference: Int)
    /// The reader now follows another media playlist (a rendition switch).
    case switched(to: URL)
    /// A live playlist's next segment is overdue (half a target duration past when it was due):
    /// none has come for `after`.
    case waitingForMedia(after: Duration)
    /// New media came after `waitingForMedia`.
    case mediaResumed
}

/// How one segment's fetch went.
public struct SegmentFetch: Sendable, Equatable {
    public var bytes: Int
    public var seconds: Double
}

/// Takes what a `SegmentReader` reads, in order.
public protocol SegmentConsumer: Sendable {
    /// A segment starts; its bytes follow. `position`: its place on the stream's one time line,
    /// in seconds from the start segment (the playlist's durations added up, lost segments
    /// included). `discontinuity`: its timestamps need not follow on from the last segment's.
    func segmentStarts(_ segment: Segment, position: Double, discontinuity: Bool) async
    /// Clear bytes of the segment (an init section first, when it changed). May wait: back-pressure.
    func segmentBytes(_ bytes: Data) async
    func segmentEnds(_ segment: Segment, fetch: SegmentFetch) async
    func readerEvent(_ event: ReaderEvent)
    /// Returns when the consumer has room for another segment: how far ahead of play-out a
    /// client reads (hls.js's `maxBufferLength`). Awaited before a segment is fetched.
    func roomForSegment() async
}

extension SegmentConsumer {
    public func roomForSegment() async {}
}

/// Why reading ended.
public enum ReaderEnd: Sendable, Equatable {
    /// `#EXT-X-ENDLIST` and every segment read.
    case endList
    /// A live playlist brought no new segment for `endAfter`.
    case noNewMedia(Duration)
}
