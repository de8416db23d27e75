import Foundation

/// Estimates where a live HLS stream's edge is, from when its media playlist
/// lists each new segment: a server lists segment N once it has all of it, so
/// the moment N first appears is (give or take a constant that is the same for
/// every listener) the moment the live edge reached N's end.
///
/// Polls are timed by the middle of each request (the server answered about
/// then): segment N appeared after the previous poll and by the one that
/// listed it. Each appearance bounds one instant, the moment the stream was at
/// the start of a reference segment; the bounds of several appearances are
/// intersected; polled finely around each appearance (`timingPollInterval`), each span is a few ms.
///
/// Pure value type, clock-free: instants are monotonic nanoseconds from the caller.
public struct LiveEdgeEstimator: Sendable, Equatable {
    /// One fetch of the media playlist.
    public struct Poll: Sendable, Equatable {
        public var mediaSequence: Int
        /// `#EXTINF` seconds of each listed segment, the first being `mediaSequence`.
        public var durations: [Double]
        /// When the request went out and the answer came back (monotonic ns).
        public var sent: Int64
        public var received: Int64

        public init(mediaSequence: Int, durations: [Double], sent: Int64, received: Int64) {
            self.mediaSequence = mediaSequence
            self.durations = durations
            self.sent = sent
            self.received = received
        }

        /// When the server answered, about.
        var middle: Int64 { sent + (received - sent) / 2 }
    }

    /// A segment first listed after `after` and by `by` (monotonic ns).
    public struct Appearance: Sendable, Equatable {
        public var sequence: Int
        public var after: Int64
        public var by: Int64
    }

    /// The live edge: at `at` (monotonic ns) the stream was `streamTime` ns past the start of the reference segment.
    public struct Edge: Sendable, Equatable {
        public var at: Int64
        public var streamTime: UInt64
    }

    /// Each segment's duration in ns, by sequence number.
    public private(set) var durations: [Int: UInt64] = [:]
    public private(set) var appearances: [Appearance] = []
    private var newestListed: Int?
    private var lastPoll: Int64?
    private var firstPolled: Int64?

    public init() {}

    /// Durations from a playlist read without timing (the player's own first one).
    public mutating func learn(mediaSequence: Int, durations: [Double]) {
        for (index, seconds) in durations.enumerated() {
            self.durations[mediaSequence + index] = UInt64(max(0, seconds) * 1e9)
        }
    }

    /// Takes one poll; true when it timed a new segment.
    @discardableResult
    public mutating func record(_ poll: Poll) -> Bool {
        learn(mediaSequence: poll.mediaSequence, durations: poll.durations)
        let newest = poll.mediaSequence + poll.durations.count - 1
        defer {
            newestListed = max(newestListed ?? newest, newest)
            lastPoll = poll.middle
            firstPolled = firstPolled ?? poll.middle
        }
        // The first poll times nothing: what it lists appeared at some unknown moment before.
        guard !poll.durations.isEmpty, let listed = newestListed, let previous = lastPoll, newest > listed else { return false }
        for sequence in (listed + 1)...newest {
            appearances.append(Appearance(sequence: sequence, after: previous, by: poll.middle))
        }
        return true
    }

    /// Appearances timed before the estimate is taken as final.
    public static let appearancesWanted = 3
    /// Poll intervals while timing (ns). Play-out anchors on the first estimate, so the first
    /// appearance is polled finely too, but only for about one segment's time (it cannot take
    /// longer); later ones finely around when they are expected (polls at one pace fall at
    /// nearly the same phase of every segment, and their spans hardly narrow each other).
    static let coarsePoll: Int64 = 50_000_000
    static let firstPoll: Int64 = 10_000_000
    static let finePoll: Int64 = 5_000_000
    /// How early the fine polls start, and how late they give up on the expected appearance.
    static let fineLead: Int64 = 40_000_000
    static let fineLimit: Int64 = 250_000_000

    /// Whether polls should still time the edge.
    public var isTiming: Bool { appearances.count < Self.appearancesWanted }

    /// How long to wait (ns) before the next timing poll, at monotonic `now`: until shortly
    /// before the next segment should appear (the newest one's appearance plus its duration,
    /// less the span it was timed to), then every few ms until it does.
    public func timingPollInterval(now: Int64) -> Int64 {
        guard let last = appearances.last, let duration = durations[last.sequence] else {
            // The first appearance comes within one segment of the first poll.
            let segment = Int64(clamping: newestListed.flatMap { durations[$0] } ?? 0)
            guard let firstPolled, now - firstPolled < segment * 3 / 2 else { return Self.coarsePoll }
            return Self.firstPoll
        }
        let expected = last.after + (last.by - last.after) / 2 + Int64(clamping: duration)
        let windowStart = expected - (last.by - last.after) - Self.fineLead
        if now < windowStart { return max(Self.finePoll, windowStart - now) }
        return now < expected + Self.fineLimit ? Self.finePoll : Self.coarsePoll
    }

    /// The live edge, counted from the start of segment `reference` (what the player's time line
    /// calls 0); nil until a segment at or after it has been timed with every duration known.
    public func edge(from reference: Int) -> Edge? {
        var bounds: [(low: Int64, high: Int64, end: UInt64)] = []
        for appearance in appearances where appearance.sequence >= reference {
            guard let end = streamTime(from: reference, throughEndOf: appearance.sequence) else { continue }
            // The instant the stream was at the reference's start lies in this span.
            let span = Int64(clamping: end)
            bounds.append((appearance.after - span, appearance.by - span, end))
        }
        guard let newest = bounds.last else { return nil }
        let low = bounds.map(\.low).max() ?? newest.low
        let high = bounds.map(\.high).min() ?? newest.high
        let origin: Int64
        if low <= high {
            origin = low + (high - low) / 2
        } else {
            // The spans disagree (a slow answer, a segment longer than listed): the median middle.
            let middles = bounds.map { $0.low + ($0.high - $0.low) / 2 }.sorted()
            origin = middles[middles.count / 2]
        }
        return Edge(at: origin + Int64(clamping: newest.end), streamTime: newest.end)
    }

    /// Nanoseconds from the start of `reference` to the end of `last`; nil with a duration unknown.
    func streamTime(from reference: Int, throughEndOf last: Int) -> UInt64? {
        guard last >= reference else { return nil }
        var total: UInt64 = 0
        for sequence in reference...last {
            guard let duration = durations[sequence] else { return nil }
            total += duration
        }
        return total
    }
}
