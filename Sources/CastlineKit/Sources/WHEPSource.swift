import Foundation
import GLibSupport
import GstKit
import PipelineConfig
import Synchronization

/// Plays a WebRTC stream from a WHEP endpoint: a receive-only transceiver for each stream the
/// pipeline uses (an audio-only listen offers audio alone), offered and answered as WHIP does
/// (`WHIPSession`), each stream decoded into the stages as any source's.
public final class WHEPSource: SourceComponent {
    public static let kind = "whep"
    public static let summary = "play a WebRTC stream from a WHEP endpoint (H.264 or VP8, and Opus)"
    public static let url = ConfigOption<String?>("url", required: true, help: "the WHEP endpoint, e.g. https://live.example.com/whep")
    public static let schema = OptionSchema(url, Credentials.token, Credentials.tokenFile, HLSSource.waitForLive, HLSSource.endAfter,
                                            WHIPSink.timeout, shorthand: "url")

    /// What is offered, preferred first: H.264 constrained baseline (packetization-mode 1) and
    /// VP8, which every WebRTC sender has; Opus.
    static let receiverCaps: [StreamKind: String] = [
        .video: "application/x-rtp,media=video,encoding-name=H264,payload=96,clock-rate=90000,packetization-mode=(string)1,"
            + "profile-level-id=(string)42e01f; application/x-rtp,media=video,encoding-name=VP8,payload=97,clock-rate=90000",
        .audio: "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000,encoding-params=(string)2",
    ]

    let endpoint: URL
    let token: Secret?
    let timeout: Duration
    let waitForLive: Bool
    /// webrtcbin ends no stream when the far end stops sending: no media for this long ends them.
    let endAfter: Duration
    let certificate: DTLSCertificate
    let name: String
    let events: EventEmitter
    private let wanted = Mutex<Set<StreamKind>>([.audio, .video])
    private let session = Mutex<WHIPSession?>(nil)
    /// Set by a stop: each stream then ends at the bin's outlet (webrtcbin ends nothing itself).
    private let ends = OutletEnds()
    /// When media last came out, once it has.
    private let lastMedia = Protected<ContinuousClock.Instant?>(nil)
    private let watchdog = Mutex<Task<Void, Never>?>(nil)

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let at = spec.keyPath
        endpoint = try WHIPSink.parse(url: options[Self.url] ?? "", at: "\(at).url", path: "whep")
        token = try Credentials.bearerToken(options, at: at)
        if let token { context.events.protect(token) }
        timeout = options[WHIPSink.timeout]
        waitForLive = options[HLSSource.waitForLive]
        endAfter = options[HLSSource.endAfter]
        certificate = try DTLSCertificate()
        name = context.componentName
        events = context.events
    }

    nonisolated(nonsending) public func prepare(wanted streams: Set<StreamKind>) async throws {
        if !streams.isEmpty { wanted.withLock { $0 = streams } }
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        Dictionary(uniqueKeysWithValues: wanted.withLock { $0 }.map { ($0, StreamForm.raw) })
    }

    /// Opus, and H.264 or VP8 (the answer says which): kept encoded when nothing needs them decoded.
    public func encodedForms() throws -> [StreamKind: StreamForm] {
        let encoded: [StreamKind: StreamForm] = [.audio: .encoded(.opus), .video: .encoded(nil)]
        return encoded.filter { wanted.withLock { streams in streams }.contains($0.key) }
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        let webrtc = try ElementCatalog.make("webrtcbin")
        try webrtc.set("bundle-policy", text: "max-bundle")
        try bin.add(webrtc)
        // webrtcbin is a sink too (its nicesink sends RTCP): the stream's end, which comes at the
        // outlets, would otherwise wait on an end-of-stream that nicesink never gets.
        bin.unsetSinkFlag()
        for stream in streams.keys.sorted() {
            if let caps = Self.receiverCaps[stream] { try webrtc.addReceiver(try Caps(caps)) }
        }
        let session = WHIPSession(protocolName: "WHEP", endpoint: endpoint, token: token, certificate: certificate, webrtc: webrtc,
                                  timeout: timeout, waitsForLive: waitForLive)
        self.session.withLock { $0 = session }
        let pem = certificate.pem
        webrtc.onDeepElementAdded { element in
            // The receiving DTLS element holds the connection's certificate.
            if element.factoryName == "dtlssrtpdec" { try? element.set("pem", pem) }
        }
        try webrtc.connect("on-negotiation-needed") { _ in session.negotiate() }
        let outlets = try URISource.outletQueues(streams.keys, in: bin)
        for (stream, queue) in outlets {
            guard let pad = queue.staticPad("sink") else { continue }
            ends.watch(pad, stream: stream)
            pad.addProbe(.buffer) { [lastMedia] _ in
                lastMedia.withLock { $0 = .now }
                return .ok
            }
        }
        watchEnd(of: Set(streams.keys.map(\.rawValue)), webrtc: webrtc)
        // Each stream webrtcbin receives comes as RTP on a pad of its own: decodebin depayloads it,
        // and decodes it only when it is wanted raw.
        let stops = try Caps(streams.map { URISource.stopCaps($0.key, $0.value) }.joined(separator: "; "))
        webrtc.onPadAdded { [weak bin] pad in
            guard let bin, let decoder = try? ElementCatalog.make("decodebin"), (try? decoder.set("caps", stops)) != nil,
                  (try? bin.add(decoder)) != nil, let sink = decoder.staticPad("sink") else { return }
            // Stamped from arrival, Opus would show gaps that are not there (see `Conversion.audioTolerance`).
            decoder.onDeepElementAdded { element in
                if element.factoryName == "opusdec" { try? element.set("tolerance", Int64(Conversion.audioTolerance.nanoseconds)) }
            }
            URISource.link(decoder, to: outlets)
            _ = decoder.syncStateWithParent()
            try? pad.link(sink)
        }
        return bin
    }

    public var endsStreamsOnStop: Bool { true }

    /// Each second: what the connection says of itself, as a stats sample under the source's
    /// name; and every stream ended once no media came for `endAfter` (the far end stopped
    /// sending, or went).
    private func watchEnd(of streams: Set<String>, webrtc: Element) {
        let lastMedia = lastMedia, ends = ends, endAfter = endAfter, name = name, events = events
        let task = Task {
            await watchConnection(webrtc, streams: streams, lastMedia: lastMedia, ends: ends, endAfter: endAfter, name: name, events: events)
        }
        watchdog.withLock { $0?.cancel(); $0 = task }
    }

    /// From webrtcbin's statistics of what it receives: jitter (the largest of the streams'),
    /// packets lost, and what it asked the sender for again (NACKs, PLIs), summed.
    static func receiveFigures(_ stats: Structure) -> [String: Double] {
        var figures: [String: Double] = [:]
        func add(_ figure: String, _ value: Int?) { if let value { figures[figure, default: 0] += Double(value) } }
        for field in stats.fieldNames {
            // webrtcbin 1.22 labels every inbound stream "audio": the streams are not told apart.
            guard let stat = stats.structure(field), stat.name == "inbound-rtp" else { continue }
            if let jitter = stat.double("jitter") { figures[StatsFigure.rtpJitter] = max(figures[StatsFigure.rtpJitter] ?? 0, jitter * 1000) }
            add(StatsFigure.packetsReceived, stat.int("packets-received"))
            add(StatsFigure.packetsLost, stat.int("packets-lost"))
            add(StatsFigure.nacks, stat.int("nack-count"))
            add(StatsFigure.plis, stat.int("pli-count"))
        }
        return figures
    }

    /// Ends each stream at the outlet: at once while none has come (an endpoint still to answer).
    public func willStop() {
        watchdog.withLock { $0?.cancel() }
        _ = ends.stop(idle: lastMedia.withLock { $0 } == nil ? Set(StreamKind.allCases.map(\.rawValue)) : [])
    }

    /// Ends the session at the endpoint.
    nonisolated(nonsending) public func finish() async {
        watchdog.withLock { $0?.cancel() }
        await session.withLock { value -> WHIPSession? in defer { value = nil }; return value }?.close()
    }
}

/// The WHEP source's watch, each second (see `WHEPSource.watchEnd`).
private func watchConnection(_ webrtc: Element, streams: Set<String>, lastMedia: Protected<ContinuousClock.Instant?>,
                             ends: OutletEnds, endAfter: Duration, name: String, events: EventEmitter) async {
    while (try? await Task.sleep(for: .seconds(1))) != nil {
        if let stats = await webrtc.webRTCStats() {
            events.emit(.stats(StatsSample(stage: name, stream: nil, figures: WHEPSource.receiveFigures(stats))))
        }
        guard let last = lastMedia.withLock({ $0 }), ContinuousClock.now - last >= endAfter else { continue }
        ends.stop(idle: streams)
        return
    }
}
