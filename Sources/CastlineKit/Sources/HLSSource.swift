import Foundation
import GstKit
import HLS
import PipelineConfig
import Synchronization

/// A live or VOD HLS stream, read by castline's own HLS client (the `HLS`
/// target): playlists and segments are fetched here and the segment bytes go
/// through appsrc into decodebin3, which demuxes (MPEG-TS, fMP4, packed audio),
/// parses and decodes as far as each stream is wanted. Network trouble is a
/// state (`reconnecting`), never an error.
public final class HLSSource: SourceComponent, HistoryStartingSource, @unchecked Sendable {  // set up in prepare/makeBin, before anything runs
    public static var kind: String { "hls" }
    public static var summary: String { "an HLS stream (live or VOD), read by castline's own HLS client" }
    public static let figures = [Figure(StatsFigure.latency, label: "latency (programme time)", meaning: .behindLive)]
    public static var schema: OptionSchema {
        OptionSchema(url, rendition, waitForLive, endAfter, timeout, shorthand: "url")
    }

    public static let url = ConfigOption<String?>("url", required: true, help: "the playlist URL, e.g. https://stream.mux.com/ID.m3u8")
    public static let rendition = ConfigOption<String>("rendition", default: "auto",
        help: "auto (adapts to throughput; audio-only rendition when video is not used), best, lowest, a bitrate (800k), or a name/resolution (720p)")
    public static let waitForLive = ConfigOption<Bool>("wait-for-live", default: false,
                                                help: "a stream not live yet (404) is waited for, retrying every 2 s")
    public static let endAfter = ConfigOption<Duration>("end-after", default: .seconds(30),
                                                 help: "the stream has ended when no new media came for this long (HLS: its playlist listed none; a server that cannot be reached is retried until it is back)")
    public static let timeout = ConfigOption<Duration>("timeout", default: HTTPFetcher.defaultIdleTimeout,
        help: "a request the server stops answering (no byte for this long) has failed, and is retried")

    let playlistURL: URL
    let rendition: String
    let waitForLive: Bool
    let endAfter: Duration
    /// What fetches playlists, keys and segments, with the `timeout` asked for.
    let fetcher: any HTTPGetting
    let keyPath: String
    let context: ComponentContext
    /// Seconds of history a time-shifting stage can hold: the live window is read from that far back.
    private var historyWanted: Double?
    /// The streams the pipeline uses. One it drops (audio-only) still gets its pad, but
    /// its packets are cut from the segments before the demuxer and never parsed.
    private var used: Set<StreamKind> = Set(StreamKind.allCases)
    private var start: HLSStart?
    private var feeds: [HLSFeed] = []
    private var stats: HLSStats?
    private let ends = OutletEnds()

    public required init(spec: ComponentSpec, context: ComponentContext) throws {
        let text = spec.options[Self.url] ?? ""
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw BuildError("\"\(text)\" is not an http(s) URL (try https://stream.mux.com/ID.m3u8)", at: "\(spec.keyPath).url")
        }
        try requireValidPort(url.port, at: "\(spec.keyPath).url")
        playlistURL = url
        rendition = spec.options[Self.rendition]
        waitForLive = spec.options[Self.waitForLive]
        endAfter = spec.options[Self.endAfter]
        let timeout = spec.options[Self.timeout]
        guard timeout > .zero else { throw BuildError("a timeout of 0 would fail every request (try 10s)", at: "\(spec.keyPath).timeout") }
        let standard = timeout == HTTPFetcher.defaultIdleTimeout
        // NIO's client costs less, but a proxy the environment names is honoured as curl honours it.
        fetcher = EventLoopFetcher.environmentNamesProxy()
            ? (standard ? HTTPFetcher.shared : HTTPFetcher(idleTimeout: timeout))
            : (standard ? EventLoopFetcher.shared : EventLoopFetcher(idleTimeout: timeout))
        keyPath = spec.keyPath
        self.context = context
    }

    public func historyWanted(_ history: Duration) {
        historyWanted = history.seconds
    }

    /// Fetches the playlists, chooses what to play, where to start, and its first
    /// segment (whose head says which streams there are).
    nonisolated(nonsending) public func prepare(wanted: Set<StreamKind>) async throws {
        used = wanted
        let events = context.events
        let reports = HLSStart.Reports(notice: { events.emit(.notice($0)) }, renditionChosen: { events.emit(.renditionChanged($0)) })
        do {
            start = try await HLSStart.prepare(
                url: playlistURL, rendition: Self.request(rendition), wantVideo: wanted.contains(.video),
                historyWanted: historyWanted, waitForLive: waitForLive, endAfter: endAfter, fetcher: fetcher, reports: reports)
        } catch let failure as StartFailure {
            throw BuildError(failure.message, at: "\(keyPath).\(failure.option.rawValue)", badInput: failure.badInput)
        }
    }

    /// `rendition:` as the HLS client takes it: auto, best, lowest, a bitrate (800k), or a name/resolution (720p).
    static func request(_ text: String) -> RenditionRequest {
        switch text.lowercased() {
        case "auto": .auto
        case "best": .best
        case "lowest": .lowest
        default: Bitrate(configText: text).map { .bitrate($0.bitsPerSecond) } ?? .named(text)
        }
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        let streams = try knownStreams().mapValues { _ in StreamForm.raw }
        guard !streams.isEmpty else { throw BuildError("\(playlistURL) has no audio or video stream castline can use", at: keyPath) }
        return streams
    }

    public func encodedForms() throws -> [StreamKind: StreamForm] {
        try knownStreams().compactMapValues { $0.map { StreamForm.encoded($0) } }
    }

    private func knownStreams() throws -> [StreamKind: Codec?] {
        guard let start else { throw BuildError("the playlist has not been read yet", at: keyPath) }
        return Dictionary(uniqueKeysWithValues: start.streams.map { kind, codec in (StreamKind(kind), codec.flatMap(Codec.init(rawValue:))) })
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        guard let start else { throw BuildError("the playlist has not been read yet", at: keyPath) }
        let bin = Bin(name: name)
        let fed = Set(streams.keys).intersection(used)
        // Audio-only listening decodes its AAC here, with the light decoder (see
        // `Conversion.lightAACDecoder`): decodebin3 stops at the encoded stream.
        let lightAAC = try fed == [.audio] && streams[.audio] == .raw && knownStreams()[.audio] == .some(.aac)
            ? Conversion.lightAACDecoder : nil
        var stopForms = streams
        if lightAAC != nil { stopForms[.audio] = .encoded(.aac) }
        // Decoding stops at what each stream is wanted in: raw, or parsed but still encoded;
        // a stream nobody wants stops encoded and ends in a discard, never decoded.
        let unwanted = try encodedForms().filter { streams[$0.key] == nil }
        let stops = try Caps(stopForms.merging(unwanted) { wanted, _ in wanted }
            .map { URISource.stopCaps($0.key, $0.value) }.joined(separator: "; "))
        // tsdemux times media by the segment's PTS against the stamps the feed gives, not by
        // its PCR: PCR-timed, nginx-rtmp's audio-only segments came out without timestamps.
        let readAhead = ReadAhead(targetDuration: start.tracks.map(\.playlist.targetDuration).max() ?? 0)
        let stalls = PlayoutStalls(tell: context.connection, onStall: { readAhead.stalled() })
        // Each decodebin3's multiqueue is its track's buffer (made with it, so met as it joins the bin).
        let decoderTracks = Mutex<[String: Int]>([:])
        bin.onDeepElementAdded { element in
            if element.factoryName == "tsdemux" { try? element.set("ignore-pcr", true) }
            guard element.factoryName == "multiqueue", let decoder = element.parent?.name else { return }
            readAhead.watch(element)
            if let track = decoderTracks.withLock({ $0[decoder] }) { stalls.watch(element, track: track) }
        }
        // decodebin3's multiqueue holds each stream's media already.
        let outlets = try URISource.outletQueues(streams.keys, in: bin, threaded: false)
        var decoded = outlets
        if let lightAAC, let queue = outlets[.audio] {
            let chain = try BinChain.make("\(name)-aac", factories: ["aacparse", lightAAC])
            try bin.add(chain)
            try chain.link(queue)
            decoded[.audio] = chain
        }
        let stats = HLSStats(name: context.componentName, events: context.events,
                             pdtStart: start.tracks.first?.startSegment?.programDateTime, playoutHold: context.playoutHold)
        let streamStarted = OnceFlag()
        // Each track's media starts at running time 0; separate renditions are put back in
        // step by their own timestamps (the first segments' PTS).
        let earliest = start.tracks.compactMap(\.earliestPTS).min()
        var feeds: [HLSFeed] = []
        for (index, track) in start.tracks.enumerated() {
            let appsrc = try AppSrc.make(name: "\(name)-segments\(index)")
            // Bytes as they arrive. MPEG-TS in a TIME segment: the feed stamps where segments go on
            // the time line (see `HLSFeed.segmentBytes`); fMP4 carries its own.
            appsrc.configure(isLive: false, format: track.container.isStampedBySegment, maxBytes: HLSFeed.queuedBytes)
            try appsrc.element.set("stream-type", text: "stream")
            // decodebin3 (1.22) fed bytes in push mode without caps stops at once with not-linked.
            if let caps = Self.caps(of: track.container) { appsrc.caps = try Caps(caps) }
            try bin.add(appsrc.element)
            if index == 0 { stats.timed(by: appsrc.element) }
            let feed = HLSFeed(track: track, variants: index == 0 ? start.variants : [], variant: start.variant?.uri,
                               appsrc: appsrc, stats: stats, streamStarted: streamStarted,
                               wanted: fed, readAhead: readAhead, stalls: stalls, trackIndex: index, context: context)
            // The reader starts when appsrc first asks for data: the pipeline is starting.
            appsrc.onNeedData { [weak feed] _ in feed?.needData() }
            appsrc.onEnoughData { [weak feed] in feed?.enoughData() }
            feeds.append(feed)
            let own = outlets.filter { start.track(of: $0.key.media) == index }
            try Self.decode(appsrc.element, container: track.container, stops: stops, in: bin,
                            to: decoded.filter { own[$0.key] != nil }) { decoder in
                decoderTracks.withLock { $0[decoder] = index }
            }
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

    /// A track's bytes into single-input decodebin3s, their streams into `outlets`:
    /// MPEG-TS straight in (tsdemux inside); fMP4 through parsebin, a decodebin3 for
    /// each of its streams (decodebin3 (1.22) fed fMP4 bytes in push mode stops with
    /// not-linked, and given two inputs it kept the first one's streams only).
    /// `made`: each decodebin3's name, before it joins the bin.
    private static func decode(_ appsrc: Element, container: HLSTrack.Container, stops: Caps, in bin: Bin,
                               to outlets: [StreamKind: Element], made: @escaping @Sendable (String) -> Void) throws {
        @Sendable func decoder() throws -> Element {
            let decoder = try ElementCatalog.make("decodebin3")
            try decoder.set("caps", stops)
            made(decoder.name)
            URISource.link(decoder, to: outlets)
            return decoder
        }
        guard container == .fragmentedMP4 else {
            let single = try decoder()
            try bin.add(single)
            return try appsrc.link(single)
        }
        let parser = try ElementCatalog.make("parsebin")
        try bin.add(parser)
        try appsrc.link(parser)
        parser.onPadAdded { [weak bin] pad in
            guard let bin, let stream = try? decoder(), (try? bin.add(stream)) != nil,
                  let input = stream.staticPad("sink"), (try? pad.link(input)) != nil else {
                pad.discardData()
                return
            }
            _ = stream.syncStateWithParent()
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

extension HLSSource {
    /// What appsrc says a track's segments carry.
    static func caps(of container: HLSTrack.Container) -> String? {
        switch container {
        case .transportStream: "video/mpegts, systemstream=(boolean)true, packetsize=(int)188"
        case .fragmentedMP4: nil
        case .packedAudio(.aac): "audio/mpeg, mpegversion=(int)4, stream-format=(string)adts"
        case .packedAudio(.mp3): "audio/mpeg, mpegversion=(int)1"
        case .packedAudio(.ac3): "audio/x-ac3"
        case .packedAudio(.eac3): "audio/x-eac3"
        }
    }
}

extension StreamKind {
    /// The HLS client's name for the same kind of stream.
    init(_ kind: MediaKind) { self = kind == .audio ? .audio : .video }
    var media: MediaKind { self == .audio ? .audio : .video }
}
