import CastlineKit

/// Play-out anchored on a live-edge estimate: the unit the stream carried as
/// PTS p plays `hold-back` after the live edge passed p, at delay 0.
///
/// The edge passed `edge.pts` at `edge.at` (monotonic), which is running time
/// r = now − (monotonic now − at); it passed p at r + (p − edge.pts). The unit's
/// running time is p − offset (offset: the stream's PTS minus running time), so
/// what output timestamps add to running time is
/// r − edge.pts + offset + hold-back (the delay then adds to that).
enum LiveAnchor {
    /// Media is taken this much before the `lead` it is handed out with (the appsinks' clock waits are not exact).
    static let margin: Int64 = 100_000_000

    static func shift(edge: SourceTimingEvents.LiveEdge, runningNow: UInt64, monotonicNow: Int64, streamOffset: Int64) -> Int64 {
        let edgeRunning = Int64(clamping: runningNow) - (monotonicNow - edge.at)
        return edgeRunning - Int64(clamping: edge.pts) + streamOffset + Int64(clamping: edge.holdBack)
    }
}
