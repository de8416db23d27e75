import GstKit

/// What a live source says downstream of its media's timing, as custom events any stage may
/// read: one that keeps history and plays out on its own clock uses them to agree with the
/// source on where the stream starts. (How much history a stage can hold reaches the source
/// before the build, `HistoryStartingSource`: it must pick its first segment before the graph
/// exists, and an answer sent upstream later came too late through a parser.)
///
/// - `offered` comes downstream from the HLS source, before the first
///   buffer: the media is paced by the live edge (so the stage takes it on the
///   pipeline clock, as a player would, and the source's own buffering stays
///   meaningful), and it starts `start-back` earlier than a player would start,
///   because the source started that far back in the playlist's live window;
///   `restamped` says how much later than the stream's own timestamps its GStreamer
///   stream time is (the source moved them, so the earlier media fits the stream's
///   segment; stream time, as an encoder downstream moves PTS and segment together).
///   `live-edge` says whether `liveEdge` events will follow.
/// - `liveEdge` comes downstream from the HLS source once it has timed the
///   playlist (see `LiveEdgeEstimator`): at monotonic instant `at` the stream's
///   live edge was at `pts` (the stream's own timestamps, before any re-stamping),
///   and a player plays `hold-back` behind it. Later ones refine earlier ones.
///
/// A source that does not answer (a file, a test signal) is taken as fast as it comes.
public enum SourceTimingEvents {
    public static let offeredName = "castline/history-offered"
    public static let liveEdgeName = "castline/live-edge"

    /// Where the live edge was, in the stream's own timestamps, and when (see `MonotonicTime`).
    public struct LiveEdge: Sendable, Equatable {
        public var pts: UInt64
        public var at: Int64
        public var holdBack: UInt64

        public init(pts: UInt64, at: Int64, holdBack: UInt64) {
            self.pts = pts
            self.at = at
            self.holdBack = holdBack
        }
    }

    public static func offered(startBack: UInt64, restamped: Int64, liveEdge: Bool) -> Event? {
        (try? Structure("\(offeredName), start-back=(guint64)\(startBack), restamped=(gint64)\(restamped), live-edge=(boolean)\(liveEdge)"))
            .map(Event.customDownstream)
    }

    public static func liveEdge(_ edge: LiveEdge) -> Event? {
        (try? Structure("\(liveEdgeName), pts=(guint64)\(edge.pts), at=(guint64)\(max(0, edge.at)), hold-back=(guint64)\(edge.holdBack)"))
            .map(Event.customDownstream)
    }

    /// What an `offered` event announces, in ns; nil for any other event.
    public static func offer(in event: EventView) -> (startBack: UInt64, restamped: Int64, liveEdge: Bool)? {
        guard event.kind == .customDownstream, event.structureName == offeredName else { return nil }
        return (event.structure?.uint64("start-back") ?? 0, Int64(event.structure?.int("restamped") ?? 0),
                event.structure?.bool("live-edge") ?? false)
    }

    /// What a `liveEdge` event says; nil for any other event.
    public static func liveEdge(in event: EventView) -> LiveEdge? {
        guard event.kind == .customDownstream, event.structureName == liveEdgeName,
              let structure = event.structure, let pts = structure.uint64("pts"), let at = structure.uint64("at"),
              let holdBack = structure.uint64("hold-back") else { return nil }
        return LiveEdge(pts: pts, at: Int64(clamping: at), holdBack: holdBack)
    }
}
