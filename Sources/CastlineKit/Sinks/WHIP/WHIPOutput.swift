import Foundation
import GstKit
import PipelineConfig
import Synchronization

/// WHIP's end of a publishing pipeline: each stream payloaded into RTP (H.264; Opus, AAC
/// decoded and re-encoded to Opus, which WebRTC takes) and into a send-only transceiver of
/// webrtcbin, which connects as `WHIPSession` negotiates it.
struct WHIPOutput: PublishOutput {
    let endpoint: URL
    let token: Secret?
    /// What comes in on the audio stream: Opus goes out as it is, AAC is re-encoded.
    let audio: Codec?
    let certificate: DTLSCertificate
    /// How long the endpoint may take to answer a request.
    let timeout: Duration
    let iceServers: ICEServers
    /// Where a line for people goes (the candidate pair, when it is chosen or changes).
    let notice: @Sendable (String) -> Void
    let sessions = WHIPSessions()

    var scheme: String { "whip" }
    var displayURL: String { Secret.maskingPath(of: endpoint) }
    var waitsForCallers: Bool { false }

    /// The payload types offered: dynamic ones, as browsers number them.
    static let videoPayload = 96, audioPayload = 111

    func build(in pipeline: Pipeline, streams: [StreamKind], picture: Bool,
               requestKeyframe: @escaping @Sendable () -> Void) throws -> (inputs: PublishInputs, output: Element) {
        let webrtc = try iceServers.webrtcbin()
        try pipeline.add(webrtc)
        let session = WHIPSession(endpoint: endpoint, token: picture ? nil : token, certificate: certificate, webrtc: webrtc,
                                  timeout: timeout)
        if !picture {
            sessions.add(session, for: webrtc)
            let pem = certificate.pem
            webrtc.onDeepElementAdded { element in
                // The receiving DTLS element holds the connection's certificate.
                if element.factoryName == "dtlssrtpdec" { try? element.set("pem", pem) }
            }
            try webrtc.connect("on-negotiation-needed") { _ in session.negotiate() }
        }
        var inputs: [StreamKind: Pad] = [:]
        // Once every stream's end has gone into webrtcbin, what came before it has been sent
        // (no queue between): the drain is over.
        let ends = Atomic(streams.count)
        for stream in streams {
            let chain = try BinChain.make("whip-\(stream)", try payloading(stream))
            try pipeline.add(chain)
            guard let first = chain.staticPad("sink"), let out = chain.staticPad("src"), let pad = webrtc.requestPad("sink_%u") else {
                throw BuildError("webrtcbin took no \(stream) stream")
            }
            try out.link(pad)
            pad.setTransceiverDirection("sendonly")
            out.addProbe([.buffer, .eventDownstream]) { info in
                if let buffer = info.buffer {
                    _ = session.sentBytes.add(UInt64(buffer.size), ordering: .relaxed)
                } else if info.event?.kind == .eos, ends.subtract(1, ordering: .relaxed).newValue == 0,
                          let drained = try? Structure(StreamPublisher.drainedMessage) {
                    webrtc.postApplicationMessage(drained)
                }
                return .ok
            }
            // A receiver's PLI or FIR comes up from webrtcbin as a force-key-unit event: the
            // encoder is in the main pipeline, so the publisher asks it there.
            if stream == .video {
                first.addProbe(.eventUpstream) { info in
                    if info.event?.structureName == "GstForceKeyUnit" { requestKeyframe() }
                    return .ok
                }
                if !picture { tellProfile(at: first) }
            }
            inputs[stream] = first
        }
        return (.streams(inputs), webrtc)
    }

    /// Says once (whatever the reconnects) when the H.264 coming in is not the constrained
    /// baseline the offer names: an encode stage asked for another profile.
    private func tellProfile(at pad: Pad) {
        pad.addProbe(.eventDownstream) { [notice, sessions] info in
            if let profile = info.event?.caps?.structure(at: 0)?.string("profile"),
               !["constrained-baseline", "baseline"].contains(profile), sessions.profileSaid.trip() {
                notice("the H.264 sent is \(profile) profile, and the offer names constrained baseline: a WebRTC player may not "
                       + "play it (encode it so before: encode: { video: { profile: constrained-baseline } })")
            }
            return .ok
        }
    }

    /// A stream's elements from its appsrc to webrtcbin: RTP payloading (and Opus encoding when
    /// AAC comes in), ending in the RTP caps webrtcbin makes its offer from.
    private func payloading(_ stream: StreamKind) throws -> [Element] {
        switch stream {
        case .video:
            let payloader = try ElementCatalog.make("rtph264pay")
            try payloader.set("config-interval", Int32(-1))
            try payloader.set("aggregate-mode", text: "zero-latency")
            // What comes in is parsed already, in the framing `WHIPSink.framing` asks of the main pipeline.
            return [payloader,
                    try BinChain.capsFilter("application/x-rtp,media=video,encoding-name=H264,payload=\(Self.videoPayload),clock-rate=90000")]
        case .audio:
            var elements: [Element] = []
            if audio != .opus {
                let encoder = try ElementCatalog.make("opusenc")
                try encoder.set("bitrate", Int32(96_000))
                elements += [try ElementCatalog.make("avdec_aac"), try ElementCatalog.make("audioconvert"),
                             try ElementCatalog.make("audioresample"),
                             try BinChain.capsFilter("audio/x-raw,rate=48000,channels=2"), encoder]
            }
            return elements + [try ElementCatalog.make("rtpopuspay"),
                               try BinChain.capsFilter("application/x-rtp,media=audio,encoding-name=OPUS,payload=\(Self.audioPayload),clock-rate=48000")]
        }
    }

    func counters(_ output: Element?) -> PublishCounters {
        PublishCounters(sent: output.flatMap(sessions.session(for:))?.sentBytes.load(ordering: .relaxed) ?? 0)
    }

    /// Connected once ICE and DTLS are up, as webrtcbin reports it (the endpoint has taken the
    /// offer), and while the far end's receiver reports say it receives more: webrtcbin 1.22 keeps
    /// saying "connected" to a peer that has gone without a word.
    func isConnected(_ output: Element?) -> Bool {
        guard let output, output.connectionState == .connected, let session = sessions.session(for: output) else { return false }
        return session.isHeard()
    }

    func lastHeard(_ output: Element) -> ContinuousClock.Instant? { sessions.session(for: output)?.lastHeard }

    func refusal(in reason: String) -> String? {
        WHIPSession.isRefusal(reason) ? reason : nil
    }

    func neverConnected(reason: String?, waited: Duration) -> String {
        let seconds = String(format: "%.1f s", waited.seconds)
        guard let reason else {
            // The endpoint took the HTTP connection and has not answered the offer: nothing of ICE was tried.
            if sessions.offerUnanswered { return WHIPSession.unanswered("WHIP", at: displayURL, after: waited) }
            return "the WebRTC connection to \(displayURL) did not come up in \(seconds) (ICE or DTLS failed)"
        }
        // Said as it is (not "cannot publish"): the session's own line names the endpoint.
        if reason.hasPrefix("the WHIP endpoint at ") { return reason }
        return "cannot publish to the WHIP endpoint \(displayURL): \(reason)"
    }

    /// From webrtcbin's statistics: what the receiver's RTCP reports say of each stream (the
    /// longest round trip, the packets lost in all), and what it asked for again (NACKs, PLIs).
    func linkFigures(_ output: Element) async -> [String: Double] {
        guard let stats = await output.webRTCStats() else { return [:] }
        var figures: [String: Double] = [:]
        var highest = 0
        func add(_ figure: String, _ value: Double?) { if let value { figures[figure, default: 0] += value } }
        for field in stats.fieldNames {
            guard let stat = stats.structure(field) else { continue }
            switch stat.name {
            case "remote-inbound-rtp":
                if let rtt = stat.double("round-trip-time"), rtt > 0 {
                    figures[StatsFigure.roundTrip] = max(figures[StatsFigure.roundTrip] ?? 0, rtt * 1000)
                }
                add(StatsFigure.packetsLost, stat.int("packets-lost").map(Double.init))
                highest += stat.structure("gst-rtpsource-stats")?.int("rb-exthighestseq") ?? 0
            case "outbound-rtp":
                add(StatsFigure.nacks, stat.int("nack-count").map(Double.init))
                add(StatsFigure.plis, stat.int("pli-count").map(Double.init))
            default:
                continue
            }
        }
        guard let session = sessions.session(for: output) else { return figures }
        session.receiverReported(highest: highest)
        if let changed = session.candidatePair(in: stats, into: &figures) { notice("\(changed)") }
        return figures
    }

    /// The pipeline has stopped: its session ends at the endpoint. On the publisher's queue, which
    /// waits for the DELETE (a few seconds at most) so a run does not exit before it is sent.
    func closed(_ output: Element) {
        guard let session = sessions.remove(output) else { return }
        let done = DispatchSemaphore(value: 0)
        Task {
            await session.close()
            done.signal()
        }
        _ = done.wait(timeout: .now() + timeout.seconds)
    }
}

/// The sessions of an output's live webrtcbins, by element.
final class WHIPSessions: Sendable {
    /// The profile sent is not the one offered, and that has been said.
    let profileSaid = OnceFlag()
    private let sessions = Mutex<(live: [Element: WHIPSession], lastAnswered: Bool?)>(([:], nil))

    func add(_ session: WHIPSession, for webrtc: Element) { sessions.withLock { $0.live[webrtc] = session } }
    func session(for webrtc: Element) -> WHIPSession? { sessions.withLock { $0.live[webrtc] } }
    func remove(_ webrtc: Element) -> WHIPSession? {
        sessions.withLock { sessions in
            let removed = sessions.live.removeValue(forKey: webrtc)
            if let removed { sessions.lastAnswered = removed.answeredAt != nil }
            return removed
        }
    }

    /// The newest session (live, or else the last ended) never had the endpoint's answer to its offer.
    var offerUnanswered: Bool {
        sessions.withLock { sessions in
            sessions.live.isEmpty ? sessions.lastAnswered == false : sessions.live.values.allSatisfy { $0.answeredAt == nil }
        }
    }
}
