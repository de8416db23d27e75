import Foundation
import GLibSupport
import GstKit
import PipelineConfig
import Synchronization
import Timing

/// A WHEP source's connection to its endpoint, inside the source bin: webrtcbin and a decodebin
/// per stream it brings, linked to the bin's outlets. Watched each second: the connection's
/// figures go out as stats, a connection that brings no media for `silenceLimit` is replaced by
/// a new session (with backoff, counted as reconnects), and none for `endAfter` ends the streams.
final class WHEPLink: Sendable {
    struct Endpoint: Sendable {
        let url: URL
        let token: Secret?
        let certificate: DTLSCertificate
        let timeout: Duration
        let waitForLive: Bool
        let iceServers: ICEServers
    }

    /// One session's elements.
    private struct Connection: Sendable {
        let webrtc: Element
        let session: WHIPSession
        let decoders: Protected<[Element]>
    }

    private let endpoint: Endpoint
    private let bin: Bin
    private let outlets: [StreamKind: Element]
    /// What decodebin stops at, per stream: raw, or still encoded.
    private let stops: Caps
    private let endAfter: Duration
    private let context: ComponentContext
    /// Set by a stop: each stream then ends at the bin's outlet (webrtcbin ends nothing itself).
    private let ends = OutletEnds()
    /// When media last came out, once it has.
    private let lastMedia = Protected<ContinuousClock.Instant?>(nil)
    private let current = Mutex<Connection?>(nil)
    private let watch = Mutex<Task<Void, Never>?>(nil)
    /// A session that fails while reconnecting says so here (the first one's failure ends the run).
    private let failure = Protected<String?>(nil)

    /// A far end that sends at least RTCP each second, and media far more often: this long without
    /// media is a connection gone (webrtcbin 1.22 says nothing when the peer vanishes).
    static let silenceLimit: Duration = .seconds(5)

    /// Opus's decoder runs its stamps on from its sample count while its input's stay this close:
    /// webrtcbin's jitter buffer stamps a packet up to ±20 ms off its place, and what times sound
    /// by its stamps (the sound-clock reader, a muxer) would see gaps and overlaps that are not there.
    static let audioTolerance = ClockTime(Duration.milliseconds(40))

    /// What is offered, preferred first: H.264 constrained baseline (packetization-mode 1) and
    /// VP8, which every WebRTC sender has; Opus.
    static let receiverCaps: [StreamKind: String] = [
        .video: "application/x-rtp,media=video,encoding-name=H264,payload=96,clock-rate=90000,packetization-mode=(string)1,"
            + "profile-level-id=(string)42e01f; application/x-rtp,media=video,encoding-name=VP8,payload=97,clock-rate=90000",
        .audio: "application/x-rtp,media=audio,encoding-name=OPUS,payload=111,clock-rate=48000,encoding-params=(string)2",
    ]

    init(endpoint: Endpoint, streams: [StreamKind: StreamForm], in bin: Bin, endAfter: Duration, context: ComponentContext) throws {
        self.endpoint = endpoint
        self.bin = bin
        self.endAfter = endAfter
        self.context = context
        stops = try Caps(streams.map { URISource.stopCaps($0.key, $0.value) }.joined(separator: "; "))
        outlets = try URISource.outletQueues(streams.keys, in: bin)
        for (stream, queue) in outlets {
            guard let pad = queue.staticPad("sink") else { continue }
            ends.watch(pad, stream: stream)
            pad.addProbe(.buffer) { [lastMedia] _ in
                lastMedia.withLock { $0 = .now }
                return .ok
            }
        }
        try connect(failed: nil)
    }

    /// Watches from now until the end.
    func start() {
        let task = Task { [weak self] in
            guard let self else { return }
            await watchEverySecond()
        }
        watch.withLock { $0?.cancel(); $0 = task }
    }

    /// Ends each stream at the outlet: at once while none has come (an endpoint still to answer).
    func stop() {
        watch.withLock { $0?.cancel() }
        _ = ends.stop(idle: lastMedia.withLock { $0 } == nil ? Set(outlets.keys.map(\.rawValue)) : [])
    }

    /// Ends the session at the endpoint.
    func finish() async {
        watch.withLock { $0?.cancel() }
        await current.withLock { value -> Connection? in defer { value = nil }; return value }?.session.close()
    }

    /// A new session's webrtcbin in the bin, negotiating. `failed`: where its failure goes; nil
    /// posts it as the element's error, which ends the run.
    private func connect(failed: (@Sendable (String) -> Void)?) throws {
        let webrtc = try endpoint.iceServers.webrtcbin()
        for stream in outlets.keys.sorted() {
            if let caps = Self.receiverCaps[stream] { try webrtc.addReceiver(try Caps(caps)) }
        }
        let session = WHIPSession(protocolName: "WHEP", endpoint: endpoint.url, token: endpoint.token, certificate: endpoint.certificate,
                                  webrtc: webrtc, timeout: endpoint.timeout, waitsForLive: endpoint.waitForLive, failed: failed)
        let pem = endpoint.certificate.pem
        webrtc.onDeepElementAdded { element in
            // The receiving DTLS element holds the connection's certificate.
            if element.factoryName == "dtlssrtpdec" { try? element.set("pem", pem) }
        }
        try webrtc.connect("on-negotiation-needed") { _ in session.negotiate() }
        let connection = Connection(webrtc: webrtc, session: session, decoders: Protected([]))
        // Each stream webrtcbin receives comes as RTP on a pad of its own: decodebin depayloads it,
        // and decodes it only when it is wanted raw.
        webrtc.onPadAdded { [weak bin, stops, outlets] pad in
            guard let bin, let decoder = try? ElementCatalog.make("decodebin"), (try? decoder.set("caps", stops)) != nil,
                  (try? bin.add(decoder)) != nil, let sink = decoder.staticPad("sink") else { return }
            connection.decoders.withLock { $0.append(decoder) }
            decoder.onDeepElementAdded { element in
                if element.factoryName == "opusdec" { try? element.set("tolerance", Int64(Self.audioTolerance.nanoseconds)) }
            }
            URISource.link(decoder, to: outlets)
            _ = decoder.syncStateWithParent()
            try? pad.link(sink)
        }
        try bin.add(webrtc)
        // webrtcbin is a sink too (its nicesink sends RTCP): the stream's end, which comes at the
        // outlets, would otherwise wait on an end-of-stream that nicesink never gets.
        bin.unsetSinkFlag()
        current.withLock { $0 = connection }
    }

    /// The session's elements out of the bin (stopped on a thread of their own: webrtcbin's stop
    /// waits for its threads), and its resource DELETEd.
    private func tearDown() async {
        guard let connection = current.withLock({ value -> Connection? in defer { value = nil }; return value }) else { return }
        let elements = [connection.webrtc] + connection.decoders.withLock { $0 }
        for element in elements {
            element.setLockedState(true)
            try? bin.remove(element)
        }
        Thread.detachNewThread { for element in elements { element.setState(.null) } }
        await connection.session.close()
    }

    private func watchEverySecond() async {
        var attempt = 0, tried: ContinuousClock.Instant?, firstAnswer: ContinuousClock.Instant?, backoff = Backoff()
        backoff.maximum = .seconds(10)
        while (try? await Task.sleep(for: .seconds(1))) != nil {
            let connection = current.withLock { $0 }
            if let connection, let stats = await connection.webrtc.webRTCStats() {
                var figures = Self.receiveFigures(stats)
                if let changed = connection.session.candidatePair(in: stats, into: &figures) {
                    context.events.emit(.notice("\(context.componentName): \(changed)"))
                }
                context.events.emit(.stats(StatsSample(stage: context.componentName, stream: nil, figures: figures)))
            }
            // A session answered that never brings media is as silent as one that stopped; one not
            // answered yet (waiting for live) is the session's to end.
            let heard = lastMedia.withLock { $0 }
            firstAnswer = firstAnswer ?? current.withLock { $0?.session.answeredAt }
            guard let reference = heard ?? firstAnswer else { continue }
            let silent = ContinuousClock.now - reference
            if silent >= endAfter {
                // Media came and stopped: the stream has ended. None ever came: the listen failed.
                guard heard != nil else {
                    // On the session's webrtcbin, or the bin when a reconnect left none.
                    (connection?.webrtc ?? bin).postError("no media from the WHEP endpoint \(Secret.maskingPath(of: endpoint.url)) in \(Int(endAfter.seconds)) s")
                    return
                }
                ends.stop(idle: Set(outlets.keys.map(\.rawValue)))
                return
            }
            if let since = tried, let last = heard, last > since {
                context.connection(.reconnected(attempts: attempt))
                (attempt, tried) = (0, nil)
                continue
            }
            let failed = failure.withLock { value -> String? in defer { value = nil }; return value }
            guard silent >= Self.silenceLimit, tried == nil || failed != nil || ContinuousClock.now - (tried ?? .now) >= Self.silenceLimit
            else { continue }
            attempt += 1
            let delay = backoff.delay(attempt: attempt, random: Double.random(in: 0..<1))
            let reason = failed ?? (heard == nil ? "no media came in \(Int(silent.seconds)) s" : "no media for \(Int(silent.seconds)) s")
            context.connection(.reconnecting(reason: reason, attempt: attempt, delay: delay))
            await tearDown()
            guard (try? await Task.sleep(for: delay)) != nil else { return }
            tried = .now
            do {
                try connect { [failure] line in failure.withLock { $0 = line } }
                _ = current.withLock { $0?.webrtc }?.syncStateWithParent()
            } catch {
                failure.withLock { $0 = "\(error)" }
            }
        }
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
}
