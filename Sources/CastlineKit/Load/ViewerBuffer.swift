import Foundation

/// A simulated player's buffer, as hls.js and ExoPlayer keep theirs: segments fetched add their
/// duration, play-out drains it at real-time pace from the first frame on, and a buffer that
/// runs dry is a stall until enough has come to play on. Times are seconds since the viewer
/// began (its player was asked to play); pure, so every stall is placed exactly where the
/// buffer ran out, not where it was next looked at.
public struct ViewerBuffer: Sendable, Equatable {
    /// Media seconds fetched, and played.
    public private(set) var fetched = 0.0
    public private(set) var played = 0.0
    /// When the first frame showed (the first segment had come whole): the time to first frame.
    public private(set) var firstFrame: Double?
    public private(set) var stalls = 0
    /// Seconds spent stalled before the current stall, if any.
    private var stalledBefore = 0.0
    private var stalledSince: Double?
    /// Where `played` was last brought up to date.
    private var now = 0.0
    /// Media ahead of the play-out a stalled player waits for before it plays on (hls.js: a segment).
    public let resumeAhead: Double
    /// The segments not yet played whose playlist gave their `EXT-X-PROGRAM-DATE-TIME`: where
    /// each begins in what was fetched, and that date.
    private var programDates: [ProgramDate] = []

    struct ProgramDate: Sendable, Equatable {
        var offset: Double
        var date: Date
    }

    public init(resumeAhead: Double) {
        self.resumeAhead = resumeAhead
    }

    /// Media fetched and not yet played.
    public var ahead: Double { fetched - played }
    public var isStalled: Bool { stalledSince != nil }

    /// Seconds stalled up to `time`.
    public func stalledSeconds(at time: Double) -> Double {
        stalledBefore + (stalledSince.map { max(0, time - $0) } ?? 0)
    }

    /// Plays on to `time`: a buffer that runs out before then stalls where it ran out.
    public mutating func advance(to time: Double) {
        guard firstFrame != nil, time > now else { return }
        if stalledSince == nil {
            let elapsed = time - now
            // Running out just as `time` comes is not a stall: what comes at `time` plays on.
            if elapsed > ahead {
                stalledSince = now + ahead
                played = fetched
                stalls += 1
            } else {
                played += elapsed
            }
        }
        now = time
    }

    /// The programme date-time of what plays now, where the segment it is in had one.
    public var programDateTime: Date? {
        guard let segment = programDates.last(where: { $0.offset <= played }) else { return nil }
        return segment.date.addingTimeInterval(played - segment.offset)
    }

    /// The `EXT-X-PROGRAM-DATE-TIME` of media that begins `offset` seconds into what is fetched.
    public mutating func programDate(_ date: Date, at offset: Double) {
        programDates.append(ProgramDate(offset: offset, date: date))
    }

    /// A segment of `duration` seconds came whole at `time`, with its `EXT-X-PROGRAM-DATE-TIME`.
    public mutating func segmentFetched(duration: Double, at time: Double, programDateTime: Date? = nil) {
        advance(to: time)
        if let programDateTime { programDate(programDateTime, at: fetched) }
        while programDates.count > 1, programDates[1].offset <= played { programDates.removeFirst() }
        fetched += duration
        guard firstFrame != nil else {
            firstFrame = time
            now = time
            return
        }
        if let since = stalledSince, ahead >= resumeAhead {
            stalledBefore += time - since
            stalledSince = nil
        }
    }
}

/// The buffer of a player that plays several tracks (a variant and its `EXT-X-MEDIA` audio
/// rendition): it holds what every track has, so it stalls when any one runs dry.
struct TrackedBuffer: Sendable {
    private(set) var buffer: ViewerBuffer
    /// Media seconds fetched per track; track 0 is the variant, whose programme times are read.
    private var fetched: [Double]

    init(tracks: Int, resumeAhead: Double) {
        buffer = ViewerBuffer(resumeAhead: resumeAhead)
        fetched = Array(repeating: 0, count: max(1, tracks))
    }

    /// Media of `track` fetched and not yet played: what its loader holds.
    func ahead(of track: Int) -> Double { fetched[track] - buffer.played }

    /// A segment of `track` came whole at `time`: the buffer gains what every track now has.
    mutating func segmentFetched(track: Int, duration: Double, at time: Double, programDateTime: Date?) {
        let before = fetched.min() ?? 0
        if track == 0, let programDateTime { buffer.programDate(programDateTime, at: fetched[0]) }
        fetched[track] += duration
        let gained = (fetched.min() ?? 0) - before
        if gained > 0 { buffer.segmentFetched(duration: gained, at: time) } else { buffer.advance(to: time) }
    }

    mutating func advance(to time: Double) { buffer.advance(to: time) }
}
