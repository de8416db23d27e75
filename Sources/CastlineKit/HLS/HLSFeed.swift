import Foundation
import GstKit
import HLS
import Synchronization

/// Runs one HLS track's `SegmentReader` and hands what it reads to GStreamer:
/// segment bytes into appsrc (TIME format: segments are stamped with their place
/// on the time line, see `segmentBytes`; the reader waits while appsrc holds
/// `queuedBytes`), the reader's trouble to the runner as `reconnecting`, and, on
/// each stream's way out of the source, the timing events a time-shifting stage listens for (`SourceTimingEvents`).
final class HLSFeed: Sendable {
    /// What appsrc may hold before the reader waits: a few segments of most streams.
    static let queuedBytes: UInt64 = 2 * 1024 * 1024

    private let track: HLSTrack
    /// What adapts across variants (the main track, `rendition: auto`); nil for a fixed rendition.
    private let abr: ABRController?
    private let appsrc: AppSrc
    private let context: ComponentContext
    private let started = OnceFlag()
    private let stopped = OnceFlag()
    /// Shared by the source's tracks: the first buffer out of any is stream-started.
    private let streamStarted: OnceFlag
    private let reading = Mutex<Task<Void, Never>?>(nil)
    private let stats: HLSStats
    private let demand = DemandGate()
    private let readAhead: ReadAhead
    /// The source's stalls, shared by its tracks; this feed's track is `trackIndex`.
    private let stalls: PlayoutStalls
    private let trackIndex: Int

    private struct Flow {
        /// The next push starts a segment whose place on the time line (seconds) must be given.
        var stamp: Double? = 0
        /// The variant playing (`rendition: auto`).
        var variant: URL?
        /// A live-edge estimate not yet sent down each outlet, by stream.
        var pendingEdge: [StreamKind: SourceTimingEvents.LiveEdge] = [:]
        /// A packed audio segment's first bytes, held until its ID3 tag is whole (nil: past it).
        var opening: [UInt8]?
    }
    private let flow = Mutex(Flow())
    /// MPEG-TS carrying streams nobody wants (video, listening audio-only) loses them here.
    private let filter: Mutex<TransportStreamFilter?>

    init(track: HLSTrack, variants: [MultivariantPlaylist.Variant], variant: URL?, appsrc: AppSrc, stats: HLSStats,
         streamStarted: OnceFlag, wanted: Set<StreamKind>, readAhead: ReadAhead, stalls: PlayoutStalls, trackIndex: Int,
         context: ComponentContext) {
        self.track = track
        self.readAhead = readAhead
        self.stalls = stalls
        self.trackIndex = trackIndex
        let carried = Set(track.streams.keys)
        let kept = Set(wanted.map(\.media))
        filter = Mutex(track.container == .transportStream && !carried.isSubset(of: kept) ? TransportStreamFilter(keeping: kept) : nil)
        abr = variants.isEmpty ? nil : ABRController(variants: variants)
        self.appsrc = appsrc
        self.stats = stats
        self.streamStarted = streamStarted
        self.context = context
        flow.withLock { $0.variant = variant }
    }

    // MARK: appsrc

    /// appsrc wants data: the first time, the reader starts.
    func needData() {
        demand.need()
        guard started.trip() else { return }
        let task = Task.detached { [self] in
            let session = track.reader.session(playlist: track.playlist, fetchedAt: track.fetchedAt, start: track.sequence,
                                               first: track.first)
            defer { session.stop() }
            for await output in session {
                switch output {
                case .segmentStarts(let segment, let position, let discontinuity):
                    segmentStarts(segment, position: position, discontinuity: discontinuity)
                case .bytes(let bytes):
                    await segmentBytes(bytes)
                case .segmentEnds(let segment, let fetch):
                    segmentEnds(segment, fetch: fetch)
                    // How far ahead of play-out a client reads (hls.js's `maxBufferLength`): the next
                    // segment is not fetched before there is room for it.
                    await readAhead.room()
                case .event(let event):
                    readerEvent(event)
                case .ended(.endList):
                    stalls.ended(track: trackIndex)
                    appsrc.endOfStream()
                case .ended(.noNewMedia(let after)):
                    context.events.emit(.streamEnded(reason: "no new media for \(after.configText)"))
                    stalls.ended(track: trackIndex)
                    appsrc.endOfStream()
                }
            }
        }
        reading.withLock { $0 = task }
        stats.start()
    }

    func enoughData() {
        demand.enough()
    }

    /// Stops reading; what appsrc holds still plays, then every stream ends.
    func stop() {
        guard stopped.trip() else { return }
        reading.withLock { $0 }?.cancel()
        demand.open()
        readAhead.stop()
        stalls.ended(track: trackIndex)
        appsrc.endOfStream()
    }

    // MARK: What the reader hands over

    private func segmentStarts(_ segment: HLS.Segment, position: Double, discontinuity: Bool) {
        stalls.segmentStarts(track: trackIndex)
        stats.segmentStarts(segment, position: position, track: trackIndex)
        flow.withLock { flow in
            // The first segment keeps the stamp it starts with; later ones get one after a discontinuity.
            if discontinuity { flow.stamp = position }
            if case .packedAudio = track.container { flow.opening = [] }
        }
    }

    /// Time comes from the playlist: the first segment, and every one after a
    /// discontinuity (a tag, a rendition switch, a skip, media lost in an outage),
    /// is stamped with its place on the time line; tsdemux (ignoring PCR) lands the
    /// segment's earliest timestamp a fixed interval after its stamp and times the
    /// rest by their own PTS. Segments that follow on carry no stamp, so their own
    /// timestamps run on without drift.
    private func segmentBytes(_ bytes: Data) async {
        // Back-pressure: appsrc says when it holds enough (a VOD is not fetched whole).
        await demand.wait()
        guard !stopped.isTripped else { return }
        var bytes = filter.withLock { $0?.filter(bytes) } ?? bytes
        // A packed audio segment's ID3 tag is not audio: its parser would take it for garbage
        // (its timestamp placed the first segment already, see `HLSStart`).
        if case .packedAudio = track.container {
            guard let audio = flow.withLock({ Self.pastTag(&$0.opening, bytes) }) else { return }
            bytes = audio
        }
        guard !bytes.isEmpty else { return }
        stalls.bytesCame(track: trackIndex)
        let pts = flow.withLock { flow -> UInt64? in
            guard let stamp = flow.stamp, track.container.isStampedBySegment else { return nil }
            flow.stamp = nil
            return UInt64(max(0, stamp) * 1e9)
        }
        bytes.withUnsafeBytes { raw in
            _ = appsrc.push(raw, pts: pts.map { ClockTime(nanoseconds: $0) }, dts: nil, duration: nil, isDelta: false,
                            discont: pts != nil)
        }
    }

    /// The bytes past a segment's opening ID3 tag; nil while the tag is not whole yet.
    static func pastTag(_ opening: inout [UInt8]?, _ bytes: Data) -> Data? {
        guard var held = opening else { return bytes }
        held.append(contentsOf: bytes)
        switch PackedAudio.tag(held) {
        case .incomplete:
            opening = held
            return nil
        case .none:
            opening = nil
            return Data(held)
        case .whole(let length, _):
            opening = nil
            return Data(held.dropFirst(length))
        }
    }

    private func segmentEnds(_ segment: HLS.Segment, fetch: SegmentFetch) {
        stats.segmentEnds(segment, fetch: fetch, track: trackIndex, streams: Set(track.streams.keys.map(StreamKind.init)))
        stalls.segmentCame(track: trackIndex)
        adapt()
    }

    private func readerEvent(_ event: ReaderEvent) {
        switch event {
        case .reconnecting(let reason, let attempt, let retryIn):
            context.connection(.reconnecting(reason: reason, attempt: attempt, delay: retryIn))
        case .reconnected(let attempts):
            context.connection(.reconnected(attempts: attempts))
            stalls.retell()
        case .skipped(let sequence, let reason):
            context.events.emit(.warning("segment \(sequence) skipped: \(reason)"))
        case .lost(let seconds):
            context.events.emit(.warning(String(format: "about %.0f s of the stream went by unheard (it left the playlist's window); playing on from the live edge", seconds)))
        case .liveEdge(let edge, let reference):
            guard reference == track.sequence else { return }
            // The playlist's durations run from the segment's cut, a video keyframe where there is
            // video: the first audio lies a varying fraction of a frame off it, segment to segment,
            // which would put two listeners starting at different segments that far apart.
            let cut = track.firstPTS[.video]
            flow.withLock { flow in
                for (kind, pts) in track.firstPTS where track.streams[kind] != nil {
                    let origin = Self.nanoseconds(ofTicks: cut ?? pts)
                    flow.pendingEdge[StreamKind(kind)] = SourceTimingEvents.LiveEdge(
                        pts: origin + edge.streamTime, at: edge.at, holdBack: UInt64(track.holdBack * 1e9))
                }
            }
        case .waitingForMedia(let after):
            stats.waitingForMedia(quiet: after)
            context.events.emit(.notice(String(format: "waiting for new media: the playlist has listed no new segment for %.1f s",
                                               after.seconds)))
        case .mediaResumed:
            stats.waitingForMedia(quiet: nil)
            context.events.emit(.notice("new media again"))
        case .switched(let url):
            if let variant = abr?.variants.first(where: { $0.uri == url }) {
                context.events.emit(.renditionChanged(HLSRenditions.describe(variant)))
            }
        }
    }

    /// `rendition: auto`: moves to the rendition the measured throughput carries.
    private func adapt() {
        guard let abr, let throughput = stats.throughput else { return }
        let next = flow.withLock { flow -> MultivariantPlaylist.Variant? in
            guard let next = abr.move(from: flow.variant, throughput: throughput) else { return nil }
            flow.variant = next.uri
            return next
        }
        if let next { track.reader.switchPlaylist(to: next.uri) }
    }

    static func nanoseconds(ofTicks ticks: UInt64) -> UInt64 { ticks * 100_000 / 9 }

    // MARK: Outlets

    /// Watches a stream leaving the source: its first buffer is stream-started, and
    /// is preceded by the history handshake's offer (see `SourceTimingEvents`); live-edge
    /// estimates go down before the next buffer after they come.
    func watch(outlet pad: Pad, stream: StreamKind) {
        let offered = OnceFlag()
        // GStreamer's stream time here against the stream's own (MPEG-TS PTS), from the first
        // buffer: in stream time, as an encoder downstream keeps it (it moves PTS and segment).
        let restamp = Mutex<Int64?>(nil)
        // Positions are told in the stream's own time (see `StreamTimeQuery`), so two listeners compare.
        StreamTimeQuery.answer(at: pad) { question in
            guard question.stream == stream, let restamped = restamp.withLock({ $0 }) else { return nil }
            let own = Int64(clamping: question.segmentTime) - restamped
            return own >= 0 ? UInt64(own) : nil
        }
        pad.addProbe(.buffer) { [weak self] info in
            guard let self else { return .ok }
            let pts = info.buffer?.pts?.nanoseconds
            if offered.trip() {
                // A time-shifting stage reports positions, and places live-edge estimates, in the stream's own.
                // (Signed: the first audio may lie a little before its segment's start, cut at the video's keyframe.)
                let here = zip(info.buffer?.pts, info.pad?.stickySegment).map { $1.signedStreamTime(of: $0) }
                let restamped = zip(here, track.firstPTS[stream.media]).map { $0 - Int64(clamping: Self.nanoseconds(ofTicks: $1)) } ?? 0
                restamp.withLock { $0 = restamped }
                let liveEdge = track.reader.options.timeLiveEdge && track.playlist.isLive && track.firstPTS[stream.media] != nil
                if let event = SourceTimingEvents.offered(startBack: UInt64(track.startBack * 1e9), restamped: restamped,
                                                        liveEdge: liveEdge) {
                    _ = info.pad?.pushEvent(event)
                }
                if streamStarted.trip() { context.events.emit(.streamStarted) }
                stalls.started()
            }
            if let edge = flow.withLock({ $0.pendingEdge.removeValue(forKey: stream) }), let event = SourceTimingEvents.liveEdge(edge) {
                _ = info.pad?.pushEvent(event)
            }
            // The outlet from the probe's info: captured, the pad would hold its own probe and never be freed.
            if let pts, let outlet = info.pad { stats.left(pts: pts, duration: info.buffer?.duration?.nanoseconds, through: outlet, stream: stream) }
            readAhead.drained()
            return .ok
        }
    }
}

/// `zip` for two optionals.
private func zip<A, B>(_ a: A?, _ b: B?) -> (A, B)? {
    guard let a, let b else { return nil }
    return (a, b)
}
