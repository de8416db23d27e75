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
    /// Seconds of history a delay stage wants at the start.
    private var historyWanted: Double?
    private var start: HLSStart?
    private var feed: HLSFeed?
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

    public func historyWanted(_ initial: Duration) {
        historyWanted = initial.seconds
    }

    /// Fetches the playlists, chooses what to play, where to start, and its first
    /// segment (whose head says which streams there are).
    nonisolated(nonsending) public func prepare(wanted: Set<StreamKind>) async throws {
        start = try await HLSStart.prepare(
            url: playlistURL, rendition: rendition, wantVideo: wanted.contains(.video), historyWanted: historyWanted,
            waitForLive: waitForLive, endAfter: endAfter, keyPath: keyPath, events: context.events)
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
        return start.streams
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        guard let start else { throw BuildError("the playlist has not been read yet", at: keyPath) }
        let bin = Bin(name: name)
        let appsrc = try AppSrc.make(name: "\(name)-segments")
        // Bytes as they arrive, in a TIME segment: the feed stamps where segments go on the time
        // line (see `HLSFeed.segmentBytes`). decodebin3 finds the container (caps spare it the guess for MPEG-TS).
        appsrc.configure(isLive: false, format: true, maxBytes: HLSFeed.queuedBytes)
        try appsrc.element.set("stream-type", text: "stream")
        if start.container == .transportStream { appsrc.caps = try Caps("video/mpegts, systemstream=(boolean)true, packetsize=(int)188") }
        // Decoding stops at what each stream is wanted in: raw, or parsed but still encoded;
        // a stream nobody wants stops encoded and ends in a discard, never decoded.
        let unwanted = try encodedForms().filter { streams[$0.key] == nil }
        let stops = try Caps(streams.merging(unwanted) { wanted, _ in wanted }
            .map { URISource.stopCaps($0.key, $0.value) }.joined(separator: "; "))
        let decoder = try ElementCatalog.make("decodebin3")
        try decoder.set("caps", stops)
        // tsdemux times media by the segment's PTS against the stamps the feed gives, not by
        // its PCR: PCR-timed, nginx-rtmp's audio-only segments came out without timestamps.
        decoder.onDeepElementAdded { element in
            if element.factoryName == "tsdemux" { try? element.set("ignore-pcr", true) }
        }
        try bin.add(appsrc.element, decoder)
        try appsrc.element.link(decoder)
        let feed = HLSFeed(start: start, appsrc: appsrc, context: context)
        var outlets: [StreamKind: Element] = [:]
        for stream in streams.keys.sorted() {
            // Short: a stop drains what is queued here, so little should wait.
            let queue = try BinChain.queue(maxTime: .milliseconds(500))
            try bin.add(queue)
            try bin.ghost(queue.staticPad("src"), as: stream.rawValue)
            outlets[stream] = queue
            if let entering = queue.staticPad("sink"), let leaving = queue.staticPad("src") {
                ends.watch(entering, stream: stream)
                feed.watch(outlet: leaving, stream: stream)
            }
        }
        URISource.link(decoder, to: outlets)
        // The reader starts when appsrc first asks for data: the pipeline is starting.
        appsrc.onNeedData { [weak feed] _ in feed?.needData() }
        appsrc.onEnoughData { [weak feed] in feed?.enoughData() }
        self.feed = feed
        return bin
    }

    /// Stops reading and ends every stream where it is: what is queued ahead of
    /// the clock (seconds, behind a live edge) is not waited for.
    public func willStop() {
        feed?.stop()
        ends.stop()
    }
}
