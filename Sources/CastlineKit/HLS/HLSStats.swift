import Foundation
import HLS
import Synchronization

/// An HLS source's own figures, sampled once a second: download throughput,
/// the last segment's fetch time, media fetched but not yet out of the source,
/// and, when the playlist carries `EXT-X-PROGRAM-DATE-TIME`, how far behind
/// the wall clock the media that plays now is (its programme time against the
/// wall clock; a time-shifting stage after the source holds what plays, and says how long).
final class HLSStats: Sendable {
    private let name: String
    private let events: EventEmitter
    private let ticking = Mutex<Task<Void, Never>?>(nil)
    private let started = OnceFlag()

    private struct State {
        var throughput = ThroughputEstimate()
        var lastFetch: Double?
        /// Seconds of media the last segment held per second its fetch took.
        var lastSpeed: Double?
        /// Seconds of media fetched, and the streams each track carries, by track (a variant, an audio rendition).
        var fetchedSeconds: [Int: Double] = [:]
        var trackStreams: [Int: Set<StreamKind>] = [:]
        /// The first PTS out of the source, and the newest with its running time, by stream (ns).
        var firstPTS: [StreamKind: UInt64] = [:]
        var newestPTS: [StreamKind: UInt64] = [:]
        /// The outlet the newest buffer left through: its segment gives that buffer's running time.
        var newestOutlet: (pad: Pad, pts: UInt64)?
        /// An element of the pipeline, for its running time now.
        var clock: Element?
        var pdtStart: Date?
        /// Since when a live playlist's next segment has been overdue.
        var waitingSince: ContinuousClock.Instant?
    }
    private let state: Mutex<State>

    /// What a time-shifting stage after the source holds: what plays now left the source that much earlier.
    private let playoutHold: PlayoutHold

    init(name: String, events: EventEmitter, pdtStart: Date?, playoutHold: PlayoutHold = PlayoutHold()) {
        self.name = name
        self.events = events
        self.playoutHold = playoutHold
        state = Mutex(State(pdtStart: pdtStart))
    }

    var throughput: Double? { state.withLock(\.throughput.bitsPerSecond) }

    /// Starts sampling; a second call (another track) changes nothing.
    func start() {
        guard started.trip() else { return }
        let task = Task.detached { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .seconds(1))
                guard let self else { return }
                self.emit()
            }
        }
        ticking.withLock { $0 = task }
    }

    func stop() {
        ticking.withLock { $0 }?.cancel()
    }

    /// A segment of `track` (carrying `streams`) came whole.
    func segmentEnds(_ segment: HLS.Segment, fetch: SegmentFetch, track: Int, streams: Set<StreamKind>) {
        state.withLock { state in
            state.fetchedSeconds[track, default: 0] += segment.duration
            state.trackStreams[track] = streams
            state.lastFetch = fetch.seconds
            state.throughput.segmentFetched(bytes: fetch.bytes, seconds: fetch.seconds)
            guard fetch.seconds > 0, fetch.bytes > 0 else { return }
            state.lastSpeed = segment.duration / fetch.seconds
        }
    }

    /// A live playlist's next segment is overdue, no new one listed for `quiet` (nil: new media
    /// came). Said in a sample at once, so a `stalled` alarm is raised and cleared when it happens,
    /// not a beat later; the figure counts from the last new segment.
    func waitingForMedia(quiet: Duration?) {
        state.withLock { state in state.waitingSince = quiet.map { state.waitingSince ?? .now - $0 } }
        emit()
    }

    /// Where to read the pipeline's running time.
    func timed(by element: Element) {
        state.withLock { $0.clock = element }
    }

    /// A buffer with this PTS left the source on `stream`, through `outlet`.
    func left(pts: UInt64, through outlet: Pad, stream: StreamKind) {
        state.withLock { state in
            if state.firstPTS[stream] == nil { state.firstPTS[stream] = pts }
            state.newestPTS[stream] = pts
            state.newestOutlet = (outlet, pts)
        }
    }

    /// Seconds of media that have left the source (the furthest stream of `streams`, nil: of all).
    private static func played(_ state: State, streams: Set<StreamKind>? = nil) -> Double? {
        state.newestPTS.compactMap { kind, pts in
            guard streams?.contains(kind) ?? true else { return nil }
            return state.firstPTS[kind].map { Double(pts &- $0) / 1e9 }
        }.max()
    }

    private func emit() {
        let figures = state.withLock { state -> [String: Double] in
            var figures: [String: Double] = [:]
            if let throughput = state.throughput.bitsPerSecond { figures[StatsFigure.downloadBitrate] = throughput / 1000 }
            if let lastFetch = state.lastFetch { figures[StatsFigure.segmentFetch] = lastFetch }
            if let lastSpeed = state.lastSpeed { figures[StatsFigure.fetchSpeed] = lastSpeed }
            let played = Self.played(state) ?? 0
            // As a player's buffer: what every track holds ahead, so the least of them.
            let ahead = state.fetchedSeconds.map { track, fetched in
                fetched - (Self.played(state, streams: state.trackStreams[track] ?? []) ?? 0)
            }
            figures[StatsFigure.hlsBuffered] = max(0, ahead.min() ?? 0)
            if let since = state.waitingSince { figures[StatsFigure.waitingForMedia] = (ContinuousClock.now - since).seconds }
            // What plays now is what left the source that long ago in running time.
            if let pdt = state.pdtStart, Self.played(state) != nil, let newest = state.newestOutlet,
               let left = newest.pad.stickySegment?.runningTime(of: ClockTime(nanoseconds: newest.pts))?.nanoseconds,
               let now = state.clock?.runningTime?.nanoseconds {
                let ahead = left > now ? Double(left - now) / 1e9 : 0
                let held = Double(playoutHold.value ?? 0) / 1e9
                figures[StatsFigure.latency] = Date().timeIntervalSince(pdt) - (played - ahead) + held
            }
            return figures
        }
        events.emit(.stats(StatsSample(stage: name, stream: nil, figures: figures)))
    }
}
