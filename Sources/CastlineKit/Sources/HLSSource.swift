import Foundation
import GstKit
import HLS
import PipelineConfig

/// A live or VOD HLS stream, read by castline's own HLS client (the `HLS`
/// target): playlists and segments are fetched here and the segment bytes go
/// through appsrc into decodebin3, which demuxes (MPEG-TS, fMP4, packed audio),
/// parses and decodes as far as each stream is wanted. Network trouble is a
/// state (`reconnecting`), never an error.
public final class HLSSource: SourceComponent, HistoryStartingSource, @unchecked Sendable {  // set up in prepare/makeBin, before anything runs
    public static var kind: String { "hls" }
    public static var summary: String { "an HLS stream (live or VOD), read by castline's own HLS client" }
    public static var schema: OptionSchema {
        OptionSchema([
            OptionField("url", .string, required: true, help: "the playlist URL, e.g. https://stream.mux.com/ID.m3u8"),
            OptionField("rendition", .string, default: .string("auto"),
                        help: "auto (adapts to throughput; audio-only rendition when video is not used), best, lowest, a bitrate (800k), or a name/resolution (720p)"),
            OptionField("wait-for-live", .bool, default: .bool(false), help: "a stream not live yet (404) is waited for, retrying every 2 s"),
            OptionField("end-after", .duration, default: .duration(.seconds(30)), help: "the stream has ended when no new media came for this long"),
        ], shorthand: "url")
    }

    let playlistURL: URL
    let rendition: String
    let waitForLive: Bool
    let endAfter: Duration
    let keyPath: String
    let context: ComponentContext
    /// Seconds of history a delay stage can hold: the live window is read from that far back.
    private var historyWanted: Double?
    private var start: HLSStart?
    private var feeds: [HLSFeed] = []
    private var stats: HLSStats?
    private let ends = OutletEnds()

    public required init(spec: ComponentSpec, context: ComponentContext) throws {
        let text = spec.options.string("url") ?? ""
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw BuildError("\"\(text)\" is not an http(s) URL (try https://stream.mux.com/ID.m3u8)", at: "\(spec.keyPath).url")
        }
        playlistURL = url
        rendition = spec.options.string("rendition") ?? "auto"
        waitForLive = spec.options.bool("wait-for-live") ?? false
        endAfter = spec.options.duration("end-after") ?? .seconds(30)
        keyPath = spec.keyPath
        self.context = context
    }

    public func historyWanted(_ history: Duration) {
        historyWanted = history.seconds
    }

    /// Fetches the playlists, chooses what to play, where to start, and its first
    /// segment (whose head says which streams there are).
    nonisolated(nonsending) public func prepare(wanted: Set<StreamKind>) async throws {
        start = try await HLSStart.prepare(
            url: playlistURL, rendition: rendition, wantVideo: wanted.contains(.video), historyWanted: historyWanted,
            waitForLive: waitForLive, endAfter: endAfter, keyPath: keyPath, events: context.events)
    }

    /// Parsed, still encoded, for a codec castline knows (the builder decodes where raw is
    /// wanted: no decodebin3, no multiqueue thread); decoded here for one it does not.
    public func streams() throws -> [StreamKind: StreamForm] {
        let streams = try knownStreams().mapValues { codec in codec.map { StreamForm.encoded($0) } ?? .raw }
        guard !streams.isEmpty else { throw BuildError("\(playlistURL) has no audio or video stream castline can use", at: keyPath) }
        return streams
    }

    public func encodedForms() throws -> [StreamKind: StreamForm] {
        try knownStreams().compactMapValues { $0.map { StreamForm.encoded($0) } }
    }

    private func knownStreams() throws -> [StreamKind: Codec?] {
        guard let start else { throw BuildError("the playlist has not been read yet", at: keyPath) }
        return start.streams
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        guard let start else { throw BuildError("the playlist has not been read yet", at: keyPath) }
        let bin = Bin(name: name)
        // tsdemux times media by the segment's PTS against the stamps the feed gives, not by
        // its PCR: PCR-timed, nginx-rtmp's audio-only segments came out without timestamps.
        bin.onDeepElementAdded { element in
            if element.factoryName == "tsdemux" { try? element.set("ignore-pcr", true) }
        }
        // Every stream leaves through an identity: what comes after queues (a sink's input, a stage).
        let outlets = try URISource.outletQueues(streams.keys, in: bin, threaded: false)
        let stats = HLSStats(name: context.componentName, events: context.events,
                             pdtStart: start.tracks.first?.startSegment?.programDateTime)
        let streamStarted = OnceFlag()
        // Each track's media starts at running time 0; separate renditions are put back in
        // step by their own timestamps (the first segments' PTS).
        let earliest = start.tracks.compactMap(\.earliestPTS).min()
        var feeds: [HLSFeed] = []
        for (index, track) in start.tracks.enumerated() {
            let appsrc = try AppSrc.make(name: "\(name)-segments\(index)")
            // Bytes as they arrive. MPEG-TS in a TIME segment: the feed stamps where segments go on
            // the time line (see `HLSFeed.segmentBytes`); fMP4 carries its own.
            appsrc.configure(isLive: false, format: track.container == .transportStream, maxBytes: HLSFeed.queuedBytes)
            try appsrc.element.set("stream-type", text: "stream")
            if track.container == .transportStream {
                appsrc.caps = try Caps("video/mpegts, systemstream=(boolean)true, packetsize=(int)188")
            }
            try bin.add(appsrc.element)
            if index == 0 { stats.timed(by: appsrc.element) }
            let feed = HLSFeed(track: track, variants: index == 0 ? start.variants : [], variant: start.variant?.uri,
                               appsrc: appsrc, stats: stats, streamStarted: streamStarted, context: context)
            // The reader starts when appsrc first asks for data: the pipeline is starting.
            appsrc.onNeedData { [weak feed] _ in feed?.needData() }
            appsrc.onEnoughData { [weak feed] in feed?.enoughData() }
            feeds.append(feed)
            let own = outlets.filter { start.track(of: $0.key) == index }
            try Self.demux(appsrc.element, container: track.container, in: bin, to: own, forms: streams)
            for (stream, queue) in own {
                guard let entering = queue.staticPad("sink"), let leaving = queue.staticPad("src") else { continue }
                ends.watch(entering, stream: stream)
                feed.watch(outlet: leaving, stream: stream)
                if start.tracks.count > 1, let earliest, let first = track.earliestPTS {
                    leaving.offset = Int64(clamping: HLSFeed.nanoseconds(ofTicks: first - earliest))
                }
            }
        }
        self.feeds = feeds
        self.stats = stats
        return bin
    }

    /// A track's bytes into its demuxer (MPEG-TS: tsdemux itself, so a stream nobody wants
    /// is dropped as it leaves it, never parsed; fMP4 and packed audio: parsebin, which
    /// finds the container), each wanted stream into its outlet as it comes: through its
    /// parser, or, for a codec castline does not know (wanted raw), through a decodebin3
    /// of its own (one input each: given two, 1.22's kept the first one's streams only).
    private static func demux(_ appsrc: Element, container: HLSTrack.Container, in bin: Bin,
                              to outlets: [StreamKind: Element], forms: [StreamKind: StreamForm]) throws {
        let demuxer = try ElementCatalog.make(container == .transportStream ? "tsdemux" : "parsebin")
        try bin.add(demuxer)
        try appsrc.link(demuxer)
        demuxer.onPadAdded { [weak bin] pad in
            guard let bin, let stream = URISource.streamKind(of: pad), let outlet = outlets[stream],
                  let inlet = outlet.staticPad("sink"), !inlet.isLinked, let form = forms[stream],
                  let chain = try? Self.chain(for: form, stream: stream, parsed: container != .transportStream),
                  (try? bin.add(chain)) != nil, let input = chain.staticPad("sink") else {
                pad.discardData()
                return
            }
            // decodebin3's src pad comes later; the others link now.
            if form == .raw { URISource.link(chain, to: [stream: outlet]) } else { try? chain.link(outlet) }
            _ = chain.syncStateWithParent()
            if (try? pad.link(input)) == nil { pad.discardData() }
        }
    }

    /// What a demuxed stream goes through to be `form`: its parser (none after parsebin, an
    /// identity then), or decodebin3 for a codec castline does not know.
    private static func chain(for form: StreamForm, stream: StreamKind, parsed: Bool) throws -> Element {
        switch form {
        case .encoded(let codec?) where !parsed:
            return try ElementCatalog.make(Conversion.parserFactories[codec] ?? "identity")
        case .encoded:
            return try ElementCatalog.make("identity")
        case .raw:
            let decoder = try ElementCatalog.make("decodebin3")
            try decoder.set("caps", Caps(URISource.stopCaps(stream, .raw)))
            return decoder
        }
    }

    /// Stops reading and ends every stream where it is: what is queued ahead of
    /// the clock (seconds, behind a live edge) is not waited for.
    public func willStop() {
        for feed in feeds { feed.stop() }
        stats?.stop()
        ends.stop()
    }
}
