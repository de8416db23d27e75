import Foundation
import HLS
import Synchronization

/// An HLS source's own figures, sampled once a second: download throughput,
/// the last segment's fetch time, media fetched but not yet out of the source,
/// and, when the playlist carries `EXT-X-PROGRAM-DATE-TIME`, how far behind
/// the wall clock the media that plays now is (its programme time against the
/// wall clock; a time-shifting stage after the source holds what plays, and says how long).
/// The programme time is the latest segment's date before what plays: after a discontinuity
/// (an encoder restarted) the dates jump where the time line does not.
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
        /// The first PTS out of the source, and where the newest ends, by stream (ns).
        var firstPTS: [StreamKind: UInt64] = [:]
        var newestEnd: [StreamKind: UInt64] = [:]
        /// The newest buffer: its stream, the outlet it left through (whose segment gives its running
        /// time, read once a second rather than for every buffer), its PTS and where it ends (ns).
        var newest: (stream: StreamKind, outlet: Pad, pts: UInt64, end: UInt64)?
        /// An element of the pipeline, for its running time now.
        var clock: Element?
        /// Where on the time line (seconds from the first segment's start) a segment of the main
        /// track began, and its `EXT-X-PROGRAM-DATE-TIME`, in order.
        var dates: [(position: Double, date: Date)] = []
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
        state = Mutex(State(dates: pdtStart.map { [(0, $0)] } ?? []))
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

    /// A segment of `track` starts at `position` on the time line: its date, if it has one, is
    /// what the main track's media from there on was made at.
    func segmentStarts(_ segment: HLS.Segment, position: Double, track: Int) {
        guard track == 0, let date = segment.programDateTime else { return }
        state.withLock { state in
            // A segment tried again starts again at its position: its date replaces what was said from there.
            state.dates.removeAll { $0.position >= position }
            state.dates.append((position, date))
            // The last thousand (half an hour of 2 s segments): what a delay moved back can reach.
            if state.dates.count > 1_000 { state.dates.removeFirst(state.dates.count - 1_000) }
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

    /// A buffer with this PTS and duration left the source on `stream` through `outlet`. Its end is
    /// what counts: it plays on after its start has passed.
    func left(pts: UInt64, duration: UInt64?, through outlet: Pad, stream: StreamKind) {
        state.withLock { state in
            if state.firstPTS[stream] == nil { state.firstPTS[stream] = pts }
            state.newestEnd[stream] = pts + (duration ?? 0)
            state.newest = (stream, outlet, pts, pts + (duration ?? 0))
        }
    }

    /// Where the time line starts in the streams' own time (ns): the earliest first PTS of the main
    /// track's streams, so that audio and video, which start apart, are placed from one origin.
    /// Nil until the main track's first segment has come whole (which streams it carries is known).
    private static func origin(_ state: State) -> UInt64? {
        guard let main = state.trackStreams[0] else { return nil }
        return state.firstPTS.filter { main.contains($0.key) }.values.min()
    }

    /// Seconds of media that have left the source (the furthest stream of `streams`, nil: of all).
    private static func played(_ state: State, streams: Set<StreamKind>? = nil) -> Double? {
        state.newestEnd.compactMap { kind, pts in
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
            // As a player's buffer: what every track holds ahead, so the least of them.
            let ahead = state.fetchedSeconds.map { track, fetched in
                fetched - (Self.played(state, streams: state.trackStreams[track] ?? []) ?? 0)
            }
            figures[StatsFigure.hlsBuffered] = max(0, ahead.min() ?? 0)
            if let since = state.waitingSince { figures[StatsFigure.waitingForMedia] = (ContinuousClock.now - since).seconds }
            // What plays now is what leaves the source now (in running time), less what a time-shifting
            // stage after it holds. Nothing plays while such a stage fills: no figure then.
            if !state.dates.isEmpty, !playoutHold.isFilling, let newest = state.newest, let origin = Self.origin(state),
               let start = newest.outlet.stickySegment?.runningTime(of: ClockTime(nanoseconds: newest.pts))?.nanoseconds,
               let now = state.clock?.runningTime?.nanoseconds {
                let left = start + (newest.end - newest.pts)
                let ahead = left > now ? Double(left - now) / 1e9 : 0
                let held = Double(playoutHold.value ?? 0) / 1e9
                let plays = Double(Int64(bitPattern: newest.end &- origin)) / 1e9 - ahead - held
                // Dated by the last segment start at or before what plays. None is dropped as what plays
                // passes it: a delay moved further back plays them again.
                let dated = state.dates.last { $0.position <= plays } ?? state.dates[0]
                figures[StatsFigure.latency] = Date().timeIntervalSince(dated.date) - (plays - dated.position)
            }
            return figures
        }
        events.emit(.stats(StatsSample(stage: name, stream: nil, figures: figures)))
    }
}
