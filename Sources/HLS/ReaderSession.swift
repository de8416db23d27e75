import AsyncAlgorithms
import Foundation

/// What a `SegmentReader` hands over, in order: each segment as its start, its clear bytes (an
/// init section's first, when it changed) and its end; the reader's events between them; and
/// `ended` last, unless the reading was stopped first.
public enum ReaderOutput: Sendable {
    /// A segment starts; its bytes follow. `position`: its place on the stream's one time line,
    /// in seconds from the start segment (the playlist's durations added up, lost segments
    /// included). `discontinuity`: its timestamps need not follow on from the last segment's.
    /// A segment retried after a failed fetch starts again.
    case segmentStarts(Segment, position: Double, discontinuity: Bool)
    case bytes(Data)
    case segmentEnds(Segment, fetch: SegmentFetch)
    case event(ReaderEvent)
    case ended(ReaderEnd)
}

/// One reading of a media playlist as an async sequence of `ReaderOutput`, as a player's segment
/// loader hands segments on. The reading goes on only once the consumer is done with what it
/// took (it asks for the next): a consumer that waits before asking (for room in its buffer,
/// for a switch it chose at a segment's end) holds the reading back, and sees the same order
/// every time. It stops at `stop()`, when the session is released, or after `ended`.
public final class ReaderSession: AsyncSequence, Sendable {
    public typealias Element = ReaderOutput
    private let outputs = AsyncChannel<ReaderOutput>()
    /// The consumer is done with the output it took last.
    private let done = AsyncChannel<Void>()
    private let reading: Task<Void, Never>

    init(_ read: @escaping @Sendable (_ deliver: (ReaderOutput) async -> Void) async -> Void) {
        let (outputs, done) = (outputs, done)
        reading = Task.detached {
            var finished = done.makeAsyncIterator()
            await read { output in
                await outputs.send(output)
                _ = await finished.next()
            }
            outputs.finish()
        }
    }

    public func makeAsyncIterator() -> Iterator { Iterator(outputs: outputs.makeAsyncIterator(), done: done) }

    public struct Iterator: AsyncIteratorProtocol {
        var outputs: AsyncChannel<ReaderOutput>.Iterator
        let done: AsyncChannel<Void>
        var holding = false

        public mutating func next() async -> ReaderOutput? {
            if holding { await done.send(()) }
            let output = await outputs.next()
            holding = output != nil
            return output
        }
    }

    /// Stops the reading: a fetch under way is cancelled, and iteration ends.
    public func stop() {
        reading.cancel()
        outputs.finish()
        done.finish()
    }

    deinit { stop() }
}

/// What a reader tells besides the media.
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

/// Why reading ended.
public enum ReaderEnd: Sendable, Equatable {
    /// `#EXT-X-ENDLIST` and every segment read.
    case endList
    /// A live playlist brought no new segment for `endAfter`.
    case noNewMedia(Duration)
}
