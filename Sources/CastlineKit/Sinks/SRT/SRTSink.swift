import Foundation
import GstKit
import PipelineConfig

/// Publishes H.264/AAC in MPEG-TS over SRT: as a caller to a listener (an ingest, a relay,
/// `ffmpeg -i srt://:PORT?mode=listener`), or as a listener a player calls (`?mode=listener`).
/// Like `rtmp`, it publishes from a pipeline of its own and reconnects with backoff, so a
/// peer that goes away never stops the others. The passphrase is a secret (`${VAR}`).
public final class SRTSink: SinkComponent {
    public static let kind = "srt"
    public static let summary = "publish MPEG-TS over SRT (caller by default, listener with ?mode=listener), reconnecting on failure"
    public static let url = ConfigOption<String?>("url", required: true, help: "srt://HOST:PORT (caller), or srt://:PORT?mode=listener")
    public static let latency = ConfigOption<Duration>("latency", default: .milliseconds(125),
                                          help: "SRT's receive latency: how long the far end waits for lost packets to come again")
    public static let schema = OptionSchema(url, Credentials.passphrase, latency, PublishOptions.maxReconnects)

    let output: SRTOutput
    let maxReconnects: Int?
    let context: ComponentContext
    private let publisher = PublisherSlot()

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let at = spec.keyPath
        let passphrase = try Credentials.srtPassphrase(options, at: at)
        if let passphrase { context.events.protect(passphrase) }
        let latency = options[Self.latency]
        output = try SRTOutput(url: options[Self.url] ?? "", passphrase: passphrase,
                               latencyMilliseconds: Int(latency.seconds * 1000), at: "\(at).url")
        maxReconnects = options[PublishOptions.maxReconnects]
        self.context = context
    }

    public static var isDestination: Bool { true }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        stream == .video ? .encoded([.h264]) : .encoded([.aac])
    }

    public func framing(for stream: StreamKind) -> String? {
        stream == .video ? "video/x-h264,stream-format=byte-stream,alignment=au" : StreamPublisher.aacFraming
    }

    /// Appsinks in the main pipeline; the publishing pipeline is the `StreamPublisher`'s.
    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        try publisher.makeBin(inputs: inputs, name: name, framing: { [self] in framing(for: $0) }, output: output,
                              maxReconnects: maxReconnects, context: context)
    }

    public var ownPipelines: [Pipeline] { publisher.ownPipelines }

    public var destinationName: String? { output.displayURL }

    nonisolated(nonsending) public func finish(completed: Bool) async -> SinkVerdict {
        await publisher.finish(drain: .seconds(5))
    }
}

/// SRT's end of a publishing pipeline: mpegtsmux into srtsink.
struct SRTOutput: MuxedOutput {
    /// `srt://host:port` with the mode, no passphrase in it.
    let uri: String
    let passphrase: Secret?
    let latencyMilliseconds: Int
    let isListener: Bool
    /// SRT's stream ID (the access-control form `#!::r=live/stream,m=publish`), which the far end
    /// reads to route or admit the stream; kept out of `uri`, as it may name a user.
    let streamID: String?

    init(url text: String, passphrase: Secret?, latencyMilliseconds: Int, at keyPath: String) throws {
        guard let url = URLComponents(string: SRTStreamID.escaped(text)), url.scheme?.lowercased() == "srt" else {
            throw BuildError("\"\(text)\" is not an srt:// URL (try srt://ingest.example:9000)", at: keyPath)
        }
        try requireValidPort(url.port, at: keyPath)
        guard let port = url.port else {
            throw BuildError("\"\(text)\" has no port (try srt://\(url.host ?? "HOST"):9000)", at: keyPath)
        }
        var mode = "caller"
        var streamID: String?
        for item in url.queryItems ?? [] {
            switch item.name {
            case "mode" where ["caller", "listener"].contains(item.value ?? ""):
                mode = item.value ?? mode
            case "streamid":
                streamID = item.value
            case "passphrase":
                throw BuildError("the passphrase does not go in the URL, where it would show (use passphrase: ${VAR})", at: keyPath)
            default:
                throw BuildError("\"\(item.name)=\(item.value ?? "")\" is not a query castline takes (mode=caller or mode=listener, streamid=…)", at: keyPath)
            }
        }
        let host = url.host ?? ""
        guard mode == "listener" || !host.isEmpty else {
            throw BuildError("a caller needs the host to call (srt://HOST:\(port)), or add ?mode=listener", at: keyPath)
        }
        isListener = mode == "listener"
        uri = "srt://\(host):\(port)" + (isListener ? "?mode=listener" : "")
        self.passphrase = passphrase
        self.latencyMilliseconds = latencyMilliseconds
        self.streamID = streamID
    }

    var scheme: String { "srt" }
    var waitsForCallers: Bool { isListener }
    var displayURL: String { uri }

    func makeElements(picture: Bool) throws -> (muxer: Element, output: Element) {
        let muxer = try ElementCatalog.make("mpegtsmux")
        // Seven TS packets per buffer: one SRT payload of 1316 bytes.
        try muxer.set("alignment", Int32(7))
        let output = try ElementCatalog.make("srtsink")
        try output.set("uri", text: uri)
        try output.set("latency", Int32(clamping: latencyMilliseconds))
        if let passphrase, !picture { try output.set("passphrase", text: passphrase.reveal()) }
        if let streamID { try output.set("streamid", text: streamID) }
        // Pacing happened in the main pipeline. A listener with no caller yet drops what comes; a
        // caller waits for its connection, so a refused one is an error, not media dropped unseen.
        try output.set("sync", false)
        try output.set("wait-for-connection", !isListener)
        // The publisher reconnects, with backoff, and counts it: srtsink's own reconnect is silent.
        try output.set("auto-reconnect", false)
        return (muxer, output)
    }

    func muxerPad(for stream: StreamKind) -> String { "sink_%d" }

    /// srtsink's bytes sent and ACK packets received: a caller's at the top of its stats, a
    /// listener's summed over its callers (srtsink counts only the data bytes it wrote, whole).
    func counters(_ output: Element?) -> PublishCounters {
        guard let stats = output?.structure("stats") else { return PublishCounters(acks: 0) }
        let sockets = stats.structures("callers") ?? [stats]
        return PublishCounters(sent: stats.uint64("bytes-sent-total") ?? 0,
                               acks: sockets.reduce(0) { $0 + ($1.uint64("packet-ack-received") ?? 0) })
    }

    /// A caller is up once the receiver has acknowledged what it sent (srtsink waits on a refused
    /// connection without an error); a listener while it has a caller (its stats then list them
    /// under `callers`) that has acknowledged data.
    func isConnected(_ output: Element?) -> Bool {
        guard let stats = output?.structure("stats") else { return false }
        let sockets = isListener ? stats.structures("callers") ?? [] : [stats]
        return sockets.contains { ($0.uint64("packet-ack-received") ?? 0) > 0 }
    }

    /// libsrt's own figures of the link, from srtsink's stats: the longest round trip, the
    /// packets lost and sent again (a listener's summed over its callers), and its estimate of
    /// the bandwidth.
    func linkFigures(_ output: Element) async -> [String: Double] {
        guard let stats = output.structure("stats") else { return [:] }
        let sockets = isListener ? stats.structures("callers") ?? [] : [stats]
        guard !sockets.isEmpty else { return [:] }
        var figures = [StatsFigure.packetsLost: 0.0, StatsFigure.retransmitted: 0.0]
        for socket in sockets {
            if let rtt = socket.double("rtt-ms") { figures[StatsFigure.roundTrip] = max(figures[StatsFigure.roundTrip] ?? 0, rtt) }
            figures[StatsFigure.packetsLost, default: 0] += Double(socket.int("packets-sent-lost") ?? 0)
            figures[StatsFigure.retransmitted, default: 0] += Double(socket.int("packets-retransmitted") ?? 0)
            // The narrowest link of a listener's callers.
            if let bandwidth = socket.double("bandwidth-mbps"), bandwidth > 0 {
                figures[StatsFigure.linkBandwidth] = min(figures[StatsFigure.linkBandwidth] ?? bandwidth, bandwidth)
            }
        }
        return figures
    }

    /// srtsink says the same for a refused passphrase and for nobody listening.
    func refusal(in reason: String) -> String? { nil }

    func neverConnected(reason: String?, waited: Duration) -> String {
        let seconds = String(format: "%.1f s", waited.seconds)
        if isListener {
            guard let reason else { return "nothing was published: no SRT caller connected to \(uri) in \(seconds)" }
            return "cannot listen for SRT callers at \(uri): \(reason) (is the port free?)"
        }
        return "the SRT peer at \(uri) did not take the connection: \(reason ?? "nothing answered in \(seconds)") "
            + "(is it listening, with the same passphrase?)"
    }
}

/// SRT's stream ID in a URL as people write it, ffmpeg and OBS alike: `?streamid=#!::r=live,m=publish`,
/// whose `#` would otherwise begin the URL's fragment.
enum SRTStreamID {
    static func escaped(_ url: String) -> String {
        url.replacingOccurrences(of: "streamid=#", with: "streamid=%23")
    }
}
