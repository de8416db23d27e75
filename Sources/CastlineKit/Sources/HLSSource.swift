import Foundation
import GstKit
import PipelineConfig
import Synchronization

/// A live or VOD HLS stream, played the way a player app plays it: from the
/// live edge, through hlsdemux2 (inside uridecodebin3, the streams-aware parent
/// it needs), buffering like a player, ending on `#EXT-X-ENDLIST` or after
/// `end-after` without new media.
public final class HLSSource: URISource, RestartableSource, HistoryStartingSource {
    public override class var kind: String { "hls" }
    public override class var summary: String { "an HLS stream (live or VOD), from the live edge" }
    public override class var schema: OptionSchema {
        OptionSchema([
            OptionField("url", .string, required: true, help: "the playlist URL, e.g. https://stream.mux.com/ID.m3u8"),
            OptionField("rendition", .string, default: .string("auto"),
                        help: "auto (adapts to bandwidth; audio-only rendition when video is not used), best, lowest, a bitrate (800k), or a name/resolution (720p)"),
            OptionField("wait-for-live", .bool, default: .bool(false), help: "a stream not live yet (404) is waited for, retrying every 2 s"),
            OptionField("end-after", .duration, default: .duration(.seconds(30)), help: "the stream has ended when no new media came for this long"),
        ], shorthand: "url")
    }

    let playlistURL: URL
    let rendition: String
    let waitForLive: Bool
    let endAfter: Duration
    let context: ComponentContext
    /// Streams the master playlist's CODECS name, or a segment's head shows
    /// (`SegmentProbe`); nil when neither tells (discovery then).
    private var declared: [StreamKind: Codec?]?
    private let endWatch: EndWatch
    /// The master playlist's renditions, to name the one hlsdemux2 switched to.
    private var variants: [HLSPlaylist.Variant] = []
    /// Starts further back in the live window when a delay stage wants history.
    private let startBack = HLSStartBack()
    /// Times the live edge for a delay stage (media playlists only).
    private let liveEdge = LiveEdgeWatch()

    public required init(spec: ComponentSpec, context: ComponentContext) throws {
        let text = spec.options.string("url") ?? ""
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
            throw BuildError("\"\(text)\" is not an http(s) URL (try https://stream.mux.com/ID.m3u8)", at: "\(spec.keyPath).url")
        }
        playlistURL = url
        rendition = spec.options.string("rendition") ?? "auto"
        waitForLive = spec.options.bool("wait-for-live") ?? false
        endAfter = spec.options.duration("end-after") ?? .seconds(30)
        self.context = context
        endWatch = EndWatch(events: context.events)
        super.init(uri: text, keyPath: spec.keyPath, loop: false, restartable: true)
    }

    nonisolated(nonsending) public override func prepare(wanted: Set<StreamKind>) async throws {
        var sent = MonotonicTime.now()
        let text = try await fetchWaitingForLive()
        let playlist: HLSPlaylist
        do {
            playlist = try HLSPlaylist.parse(text, base: playlistURL)
        } catch {
            throw BuildError("\(error)", at: "\(keyPath).url")
        }
        guard case .master(let variants) = playlist else {
            if case .media(let media) = playlist {
                mediaPlaylist(playlistURL, media, sent: sent, received: MonotonicTime.now())
                declared = await SegmentProbe.streams(of: media)
            }
            return
        }
        self.variants = variants
        let variant = try choose(from: variants, wantVideo: wanted.contains(.video))
        if let variant {
            uri = variant.uri.absoluteString
            declared = Self.streams(named: variant.codecs)
            // The rendition's own playlist says whether it is live (a failure here is hlsdemux2's to report).
            sent = MonotonicTime.now()
            if let text = try? await HLSFetcher.fetch(variant.uri),
               case .media(let media)? = try? HLSPlaylist.parse(text, base: variant.uri) {
                mediaPlaylist(variant.uri, media, sent: sent, received: MonotonicTime.now())
                if declared == nil { declared = await SegmentProbe.streams(of: media) }
            }
            context.events.emit(.renditionChanged(Self.describe(variant)))
        } else {
            declared = Self.streams(named: variants.flatMap(\.codecs))
        }
    }

    /// The media playlist hlsdemux2 plays: a live one has an edge to time (this fetch is its first look).
    private func mediaPlaylist(_ url: URL, _ media: HLSPlaylist.Media, sent: Int64, received: Int64) {
        startBack.playlist(isLive: !media.isEnded)
        guard !media.isEnded else { return }
        liveEdge.poll(url, fetched: media, sent: sent, received: received)
        startBack.expectLiveEdge()
    }

    nonisolated(nonsending) private func fetchWaitingForLive() async throws -> String {
        var announced = false
        while true {
            do {
                return try await HLSFetcher.fetch(playlistURL)
            } catch HLSError.http(status: 404, _) where waitForLive {
                if !announced {
                    context.events.emit(.notice("waiting for \(playlistURL.absoluteString) to go live (HTTP 404); retrying every 2 s"))
                    announced = true
                }
                try await Task.sleep(for: .seconds(2))
                if isStopping { throw CancellationError() }
            } catch HLSError.http(status: 404, let url) {
                throw BuildError("the playlist is not there (HTTP 404 for \(url)); if the stream is not live yet, add --wait-for-live",
                                 at: "\(keyPath).url")
            } catch {
                throw BuildError("\(error)", at: "\(keyPath).url")
            }
        }
    }

    /// The variant to play, or nil to let hlsdemux2 adapt across all of them.
    private func choose(from variants: [HLSPlaylist.Variant], wantVideo: Bool) throws -> HLSPlaylist.Variant? {
        let byBandwidth = variants.sorted { $0.bandwidth < $1.bandwidth }
        switch rendition.lowercased() {
        case "auto":
            guard !wantVideo else { return nil }
            return byBandwidth.last(where: \.isAudioOnly)
        case "best":
            return byBandwidth.last(where: { !wantVideo || $0.hasVideo != false })
        case "lowest":
            return byBandwidth.first(where: { !wantVideo || $0.hasVideo != false })
        default:
            let wanted = rendition.lowercased()
            if let bitrate = Bitrate(configText: rendition),
               let fitting = byBandwidth.last(where: { $0.bandwidth <= bitrate.bitsPerSecond }) {
                return fitting
            }
            if let match = variants.first(where: {
                $0.name?.lowercased() == wanted || $0.resolution?.lowercased() == wanted
                    || $0.resolution.map { "\($0.split(separator: "x").last ?? "")p" } == wanted
            }) {
                return match
            }
            let known = byBandwidth.map(Self.describe).joined(separator: "; ")
            throw BuildError("no rendition \"\(rendition)\" in the playlist (it has: \(known))", at: "\(keyPath).rendition")
        }
    }

    static func describe(_ variant: HLSPlaylist.Variant) -> String {
        let size = variant.resolution ?? (variant.isAudioOnly ? "audio only" : "?")
        return "\(variant.name.map { "\($0) " } ?? "")\(size) \(variant.bandwidth / 1000)k"
    }

    /// Each stream `CODECS` names, with its codec (nil: one castline does not know; decoded).
    static func streams(named codecs: [String]) -> [StreamKind: Codec?]? {
        guard !codecs.isEmpty else { return nil }
        var streams: [StreamKind: Codec?] = [:]
        for codec in codecs {
            let name = codec.lowercased()
            if HLSPlaylist.Variant.isAudioCodec(name) {
                streams[.audio] = .some(name.hasPrefix("mp4a") ? .aac : name.hasPrefix("opus") ? .opus : nil)
            } else {
                streams[.video] = .some(name.hasPrefix("avc") ? .h264 : name.hasPrefix("hvc") || name.hasPrefix("hev") ? .h265 : nil)
            }
        }
        return streams
    }

    override func knownStreams() throws -> [StreamKind: Codec?] {
        try declared ?? super.knownStreams()
    }

    // MARK: Riding out network trouble

    /// After the stream has started, what fails inside the source is the network
    /// or the server (hlsdemux2 gives up after about three target durations
    /// without a playlist); a stream that never started is bad input instead.
    public var canRestart: Bool { endWatch.hasStarted }

    /// The playlist must answer again; then a fresh hlsdemux2 starts at the live edge.
    nonisolated(nonsending) public func restart() async throws {
        guard let url = URL(string: uri) else { return }
        _ = try await HLSFetcher.fetch(url)
        try replaceDecoder()
    }

    public func historyWanted(_ initial: Duration) {
        startBack.wanted(ClockTime(initial).nanoseconds)
    }

    override func decoderMade(_ decoder: Element) {
        // Buffering messages let the runner pause and resume as a player does.
        try? decoder.set("use-buffering", true)
        startBack.decoderMade(decoder)
        liveEdge.decoderMade(decoder)
        endWatch.start(endAfter: endAfter)
    }

    override func outletMade(_ pad: Pad, stream: StreamKind) {
        // Where the stream leaves the outlet queue, so a stage's request is in before the first buffer.
        if let leaving = pad.parentElement?.staticPad("src") {
            liveEdge.watch(leaving)
            startBack.watch(leaving)
        }
        endWatch.watch(pad)
        if stream == .video, uri == playlistURL.absoluteString, !variants.isEmpty { watchSwitches(pad) }
    }

    /// hlsdemux2 adapts across the renditions on its own (`rendition: auto`); a
    /// new picture size on the video is a switch, reported as rendition-changed
    /// with the master playlist's name for it.
    private func watchSwitches(_ pad: Pad) {
        let watch = RenditionWatch(variants: variants, events: context.events)
        pad.addProbe(.eventDownstream) { info in
            if let caps = info.event?.caps { watch.saw(caps) }
            return .ok
        }
    }
}

/// Tells rendition switches by the picture size of the video's caps.
final class RenditionWatch: Sendable {
    let variants: [HLSPlaylist.Variant]
    let events: EventEmitter
    private let lastSize = Mutex<String?>(nil)

    init(variants: [HLSPlaylist.Variant], events: EventEmitter) {
        self.variants = variants
        self.events = events
    }

    func saw(_ caps: Caps) {
        guard let structure = caps.structure(at: 0), let width = structure.int("width"),
              let height = structure.int("height") else { return }
        let size = "\(width)x\(height)"
        let changed = lastSize.withLock { last -> Bool in
            defer { last = size }
            return last != size
        }
        guard changed else { return }
        let variant = variants.last { $0.resolution == size }
        events.emit(.renditionChanged(variant.map(HLSSource.describe) ?? size))
    }
}

/// Ends a stream that stopped bringing media: no new buffer on any outlet for
/// `end-after` means the stream is over (a live publisher that went away).
final class EndWatch: Sendable {
    private let events: EventEmitter
    private let lastMedia = Mutex<ContinuousClock.Instant?>(nil)
    private let outlets = Mutex<[Pad]>([])
    private let started = OnceFlag()
    private let running = OnceFlag()

    init(events: EventEmitter) {
        self.events = events
    }

    /// Media has come through at least once.
    var hasStarted: Bool { lastMedia.withLock { $0 != nil } }

    /// Watches a stream's outlet; its first buffer is stream-started.
    func watch(_ pad: Pad) {
        outlets.withLock { $0.append(pad) }
        pad.addProbe(.buffer) { [weak self] _ in
            guard let self else { return .ok }
            self.lastMedia.withLock { $0 = .now }
            if self.started.trip() { self.events.emit(.streamStarted) }
            return .ok
        }
    }

    /// Starts watching; a second call (a replaced decoder) changes nothing.
    func start(endAfter: Duration) {
        guard running.trip() else { return }
        let events = events
        Task { [weak self] in
            while let self {
                try? await Task.sleep(for: .milliseconds(500))
                guard let last = self.lastMedia.withLock({ $0 }) else { continue }
                guard ContinuousClock.now - last > endAfter else { continue }
                events.emit(.streamEnded(reason: "no new media for \(endAfter.configText)"))
                for pad in self.outlets.withLock({ $0 }) { pad.sendEvent(.endOfStream()) }
                return
            }
        }
    }
}
