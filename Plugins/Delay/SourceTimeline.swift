import Synchronization

/// How each stream's own timestamps (the PTS it carried into the stage: for HLS the MPEG-TS
/// PTS) map to the running time the history keeps, so the stage can say which media it is
/// playing out in the stream's own terms (see `StreamTimeQuery`).
///
/// Why not per unit: the difference only changes when the stream brings a new
/// segment (a discontinuity, a reconnect), so a short list of changes per
/// stream costs nothing next to 8 more bytes for each of ~170,000 units an hour.
final class SourceTimeline: Sendable {
    /// From running time `from` on, stream PTS = running time + `offset`.
    struct Change: Equatable, Sendable {
        var from: UInt64
        var offset: Int64
    }

    /// Changes kept per stream: older ones have long left any history.
    static let keptChanges = 64

    private let changes = Mutex<[[Change]]>([])

    init() {}

    /// A unit of `stream` with running time `runningTime` carried `streamPTS`.
    func saw(stream: Int, runningTime: UInt64, streamPTS: UInt64) {
        let offset = Int64(bitPattern: streamPTS &- runningTime)
        changes.withLock { changes in
            while changes.count <= stream { changes.append([]) }
            guard changes[stream].last?.offset != offset else { return }
            changes[stream].append(Change(from: runningTime, offset: offset))
            if changes[stream].count > Self.keptChanges { changes[stream].removeFirst() }
        }
    }

    /// The stream's PTS minus running time now (the newest change); nil before the stream brought anything.
    func latestOffset(stream: Int) -> Int64? {
        changes.withLock { changes in changes.indices.contains(stream) ? changes[stream].last?.offset : nil }
    }

    /// The stream PTS of running time `runningTime` on `stream`; nil before the stream brought anything.
    func streamPTS(stream: Int, runningTime: UInt64) -> UInt64? {
        changes.withLock { changes in
            guard changes.indices.contains(stream) else { return nil }
            let list = changes[stream]
            // The change in force: the last one from at or before `runningTime` (else the first).
            guard let change = list.last(where: { $0.from <= runningTime }) ?? list.first else { return nil }
            let pts = Int64(clamping: runningTime) &+ change.offset
            return pts >= 0 ? UInt64(pts) : nil
        }
    }
}
