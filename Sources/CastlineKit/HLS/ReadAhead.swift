import GstKit
import Synchronization

/// How far ahead of play-out an HLS source reads, by media time (hls.js's
/// `maxBufferLength`, ExoPlayer's buffer duration).
///
/// decodebin3 sizes its multiqueue by the streams' interleave (about 250 ms), so
/// it is always full and every frame leaving it wakes the thread above it: for
/// AAC, 47 context switches a second, half of what audio-only listening cost
/// beyond decoding. Its multiqueues are given room instead (no time limit), and the
/// reader stops fetching segments while one of them holds `high` of media, until
/// they hold `low`.
final class ReadAhead: Sendable {
    let high: Duration
    let low: Duration
    /// The multiqueues' own limit, should a segment of a high-bitrate video pass `high` by far.
    static let maxBytes: UInt32 = 64 << 20

    private let queues = Mutex<[Element]>([])
    private let gate = DemandGate()

    init(targetDuration: Double) {
        high = .seconds(max(30, 4 * targetDuration))
        low = high / 2
    }

    /// One of the source's decodebin3 multiqueues, sized by this instead of by interleave.
    func watch(_ multiqueue: Element) {
        try? multiqueue.set("use-interleave", false)
        try? multiqueue.set("max-size-time", UInt64(0))
        try? multiqueue.set("max-size-buffers", UInt32(0))
        try? multiqueue.set("max-size-bytes", Self.maxBytes)
        queues.withLock { $0.append(multiqueue) }
    }

    /// Before a segment is fetched: waits while a multiqueue holds `high` or more.
    func room() async {
        if held >= high { gate.enough() }
        await gate.wait()
    }

    /// Media left the source: reading goes on once every multiqueue holds less than `low`.
    func drained() {
        guard !gate.isWanted, held < low else { return }
        gate.need()
    }

    /// A track ran dry (a stall): reading goes on whatever another track holds, or the stalled
    /// player, which plays nothing out, would wait for room that never comes.
    func stalled() { gate.need() }

    /// No more waiting (the source stops).
    func stop() { gate.open() }

    /// The most media one multiqueue holds.
    private var held: Duration {
        let nanoseconds = queues.withLock { $0 }.flatMap(\.srcPads).compactMap { $0.int("current-level-time") }.max() ?? 0
        return .nanoseconds(nanoseconds)
    }
}
