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
/// - a server that acknowledges (as RTMP asks) has not, for two of its windows of bytes, nor
///   for a good while (a slow uplink's acknowledgements lag, but keep coming);
/// - nothing more could be written for `writeStall`, though media came to be sent.
struct FarEndWatch {
    static let writeStall: Duration = .seconds(5)
    /// Readings come every half second: ten minutes of them at most.
    private static let kept = 1_200
    private var grew: [(at: ContinuousClock.Instant, sent: UInt64)] = []
    private var last: WriteProgress?
    /// When the acknowledged count last went up, and the time between its last two rises.
    private var ackRose: ContinuousClock.Instant?
    private var ackInterval: Duration?

    /// Takes a reading; says since when the far end has not taken the stream, once that is
    /// plain (nil: it takes it, as far as can be told).
    mutating func read(_ progress: WriteProgress, mediaCame: ContinuousClock.Instant?,
                       at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        if progress.sent > (grew.last?.sent ?? 0) || grew.isEmpty { grew.append((now, progress.sent)) }
        if grew.count > Self.kept { grew.removeFirst(grew.count - Self.kept) }
        if progress.acked > (last?.acked ?? 0) {
            if let ackRose { ackInterval = now - ackRose }
            ackRose = now
        }
        last = progress
        if acknowledges, progress.sent > progress.acked + 2 * progress.window, ackSilent(at: now, corroborated: false) {
            return overdueSince ?? now
        }
        guard let lastGrowth = writesStopped(mediaCame: mediaCame, for: Self.writeStall, at: now) else { return nil }
        return overdueSince(at: now, corroborated: true) ?? lastGrowth
    }

    /// Since when, at the latest, the far end had stopped taking the stream, for a connection
    /// that failed or is ending: when an acknowledgement was due and did not come, or the
    /// writes stopped while media still came.
    func quietSince(mediaCame: ContinuousClock.Instant?, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let lastGrowth = writesStopped(mediaCame: mediaCame, for: .seconds(2), at: now) else {
            return overdueSince(at: now, corroborated: false)
        }
        return overdueSince(at: now, corroborated: true) ?? lastGrowth
    }

    /// When the writes last went on, if they have not for `least` while media came to be sent.
    private func writesStopped(mediaCame: ContinuousClock.Instant?, for least: Duration,
                               at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        guard let lastGrowth = grew.last?.at, let mediaCame, mediaCame > lastGrowth + .seconds(1),
              now - lastGrowth >= least else { return nil }
        return lastGrowth
    }

    /// The server acknowledges, and its count is one to go by: past nginx-rtmp's counter reset
    /// (at 0xf0000000 bytes, which rtmp2sink reads as a 32-bit rollover) it runs ahead of what was sent.
    private var acknowledges: Bool {
        guard let last else { return false }
        return last.acked > 0 && last.acked <= last.sent
    }

    /// No acknowledgement for twice the last time between two, and for 10 s; 2 s where the
    /// writes have stopped too (`corroborated`: two signs agree).
    private func ackSilent(at now: ContinuousClock.Instant, corroborated: Bool) -> Bool {
        guard let ackRose else { return false }
        return now - ackRose >= max(corroborated ? .seconds(2) : .seconds(10), (ackInterval ?? .zero) * 2)
    }

    private func overdueSince(at now: ContinuousClock.Instant, corroborated: Bool) -> ContinuousClock.Instant? {
        ackSilent(at: now, corroborated: corroborated) ? overdueSince : nil
    }

    /// When the sent count first passed the last acknowledgement by a window and a half (the
    /// half for a server that acknowledges a little late).
    private var overdueSince: ContinuousClock.Instant? {
        guard acknowledges, let last else { return nil }
        let due = last.acked + last.window + last.window / 2
        return last.sent > due ? grew.first { $0.sent > due }?.at : nil
    }
}
