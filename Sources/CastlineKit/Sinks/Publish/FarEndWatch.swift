/// What an output says of the bytes it wrote on a connection: all of them, those the far end
/// acknowledged, and how many it acknowledges at a time (RTMP's window).
struct WriteProgress: Sendable, Equatable {
    var sent: UInt64
    var acked: UInt64
    var window: UInt64
}

/// Whether the far end of a publish still takes the stream. A server that stops reading
/// (frozen, or a path gone dead) leaves TCP taking megabytes into socket buffers, and the
/// count of bytes sent goes on growing meanwhile. Two things tell it:
/// - a server that acknowledges (as RTMP asks) has not, for two of its windows of bytes;
/// - nothing more could be written for `writeStall`, though media came to be sent.
struct FarEndWatch {
    static let writeStall: Duration = .seconds(5)
    /// Readings come every half second: ten minutes of them at most.
    private static let kept = 1_200
    private var grew: [(at: ContinuousClock.Instant, sent: UInt64)] = []
    private var last: WriteProgress?

    /// Takes a reading; says since when the far end has not taken the stream, once that is
    /// plain (nil: it takes it, as far as can be told).
    mutating func read(_ progress: WriteProgress, mediaCame: ContinuousClock.Instant?,
                       at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        if progress.sent > (grew.last?.sent ?? 0) || grew.isEmpty { grew.append((now, progress.sent)) }
        if grew.count > Self.kept { grew.removeFirst(grew.count - Self.kept) }
        last = progress
        if progress.acked > 0, progress.sent > progress.acked + 2 * progress.window { return overdueSince ?? now }
        guard let lastGrowth = grew.last?.at, let mediaCame, mediaCame > lastGrowth + .seconds(1),
              now - lastGrowth >= Self.writeStall else { return nil }
        return overdueSince ?? lastGrowth
    }

    /// Since when, at the latest, the far end had stopped taking the stream, for a connection
    /// that failed or is ending: when an acknowledgement was due and did not come, or the
    /// writes stopped while media still came.
    func quietSince(mediaCame: ContinuousClock.Instant?, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        if let overdueSince { return overdueSince }
        guard let lastGrowth = grew.last?.at, let mediaCame, mediaCame > lastGrowth + .seconds(1),
              now - lastGrowth >= .seconds(2) else { return nil }
        return lastGrowth
    }

    /// When the sent count first passed the last acknowledgement by a window and a half (once
    /// one came: the half for a server that acknowledges a little late).
    private var overdueSince: ContinuousClock.Instant? {
        guard let last, last.acked > 0 else { return nil }
        let due = last.acked + last.window + last.window / 2
        return last.sent > due ? grew.first { $0.sent > due }?.at : nil
    }
}
