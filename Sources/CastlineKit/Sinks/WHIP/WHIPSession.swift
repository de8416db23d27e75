import Foundation
import GstKit
import HTTPClient
import PipelineConfig
import Synchronization

/// One WHIP (RFC 9725) or WHEP session for one webrtcbin, the same exchange both ways: when
/// webrtcbin asks to negotiate, its offer (ICE gathered, no trickle) is POSTed to the endpoint
/// and the answer set; the resource the endpoint names in `Location` is DELETEd at the end. A
/// failure is posted as webrtcbin's error: a publisher handles it as any output's (a refusal
/// ends the publish, anything else is retried with backoff), a source's ends the run.
final class WHIPSession: Sendable {
    /// "WHIP" or "WHEP", as messages name the endpoint.
    let protocolName: String
    private let endpoint: URL
    private let token: Secret?
    private let certificate: DTLSCertificate
    private let webrtc: Element
    private let fetcher: HTTPFetcher
    /// The session's resource, once the endpoint has made it.
    private let resource = Mutex<URL?>(nil)
    /// A WHEP player's: an endpoint that answers 404 (nothing published there yet) is asked
    /// again every 2 s, as an HLS listen waits for live.
    private let waitsForLive: Bool
    private let closed = OnceFlag()
    /// When the endpoint's answer was set.
    private let answered = Mutex<ContinuousClock.Instant?>(nil)
    var answeredAt: ContinuousClock.Instant? { answered.withLock { $0 } }
    /// Where a failure goes; nil: posted as webrtcbin's error.
    private let failed: (@Sendable (String) -> Void)?
    /// RTP bytes the payloaders handed to webrtcbin: what this connection sent.
    let sentBytes = Atomic<UInt64>(0)
    /// The highest sequence numbers the far end's receiver reports have given (summed over the
    /// streams), and when they last rose; nil until the connection is first seen up.
    private let heard = Mutex<(highest: Int, at: ContinuousClock.Instant)?>(nil)
    private let pair = Mutex<ICECandidatePair?>(nil)

    /// The candidate pair in webrtcbin's statistics, its `ice_relayed` put in `figures`; returned
    /// when it is new to this session, to be said (once, and at each change).
    func candidatePair(in stats: Structure, into figures: inout [String: Double]) -> ICECandidatePair? {
        guard let now = ICECandidatePair(stats) else { return nil }
        figures[StatsFigure.iceRelayed] = now.relayed
        return pair.withLock { pair in defer { pair = now }; return pair != now ? now : nil }
    }
    /// With receiver reports about once a second (RFC 3550's interval at these rates), this long
    /// without one that says more arrived is a far end that has gone.
    static let silenceLimit: Duration = .seconds(5)

    init(protocolName: String = "WHIP", endpoint: URL, token: Secret?, certificate: DTLSCertificate, webrtc: Element,
         timeout: Duration, waitsForLive: Bool = false, failed: (@Sendable (String) -> Void)? = nil) {
        self.protocolName = protocolName
        self.waitsForLive = waitsForLive
        self.failed = failed
        self.endpoint = endpoint
        self.token = token
        self.certificate = certificate
        self.webrtc = webrtc
        fetcher = HTTPFetcher(idleTimeout: timeout, followsRedirects: false)
    }

    /// The far end's receiver reports, as webrtcbin's statistics last gave them.
    func receiverReported(highest: Int) {
        heard.withLock { heard in
            if let last = heard, highest <= last.highest { return }
            heard = (highest, .now)
        }
    }

    /// Whether the far end has said, within `silenceLimit`, that it receives more (counted from
    /// when the connection is first seen up).
    func isHeard() -> Bool {
        heard.withLock { heard in
            guard let last = heard else {
                heard = (0, .now)
                return true
            }
            return ContinuousClock.now - last.at < Self.silenceLimit
        }
    }

    /// When the far end last said it received more.
    var lastHeard: ContinuousClock.Instant? { heard.withLock { $0?.at } }

    /// webrtcbin's "on-negotiation-needed".
    func negotiate() {
        webrtc.makeOffer { [self] result in
            Task { await offered(result) }
        }
    }

    private func offered(_ result: Result<String, GstError>) async {
        let offer: String
        switch result {
        case .success(let sdp): offer = certificate.stamp(sdp)
        case .failure(let error): return fail("cannot make a WebRTC offer: \(error)")
        }
        var headers = ["Content-Type": "application/sdp", "Accept": "application/sdp"]
        if let token { headers["Authorization"] = "Bearer \(token.reveal())" }
        var (reply, url) = (HTTPResponse(status: 0, headers: [:], body: Data()), endpoint)
        do {
            while true {
                url = endpoint
                // 307 and 308 are followed here, the offer POSTed again (RFC 9110 §15.4.8).
                for _ in 0...HTTPFetcher.maxRedirects {
                    reply = try await fetcher.fetch("POST", url, headers: headers, body: Data(offer.utf8), limit: 1 << 20)
                    guard [307, 308].contains(reply.status), let location = reply.headers["location"],
                          let next = URL(string: location, relativeTo: url)?.absoluteURL else { break }
                    url = next
                }
                guard waitsForLive, reply.status == 404, !closed.isTripped else { break }
                try await Task.sleep(for: .seconds(2))
            }
        } catch FetchError.timedOut(_, let after) {
            return fail(Self.unanswered(protocolName, at: Secret.maskingPath(of: endpoint), after: after))
        } catch {
            // The fetcher's error names the URL: its path may hold a key, and is masked as everywhere.
            let line = [endpoint, url].reduce("\(error)") { $0.replacingOccurrences(of: $1.absoluteString, with: Secret.maskingPath(of: $1)) }
            return fail(line)
        }
        if reply.status == 201 || reply.status == 200, let location = reply.headers["location"],
           let resource = URL(string: location, relativeTo: url) {
            self.resource.withLock { $0 = resource.absoluteURL }
        }
        // Ended while the endpoint answered: what it made for this session goes too.
        guard !closed.isTripped else { return await close() }
        if let refusal = Self.refusal(status: reply.status, endpoint: Secret.maskingPath(of: endpoint), protocolName: protocolName) {
            return fail(refusal)
        }
        guard reply.status == 201 || reply.status == 200 else {
            return fail("the \(protocolName) endpoint answered HTTP \(reply.status)")
        }
        do {
            try webrtc.setAnswer(reply.text)
            answered.withLock { $0 = .now }
        } catch {
            fail("the \(protocolName) endpoint's answer was refused: \(error)")
        }
    }

    private func fail(_ line: String) {
        if let failed { failed(line) } else { webrtc.postError(line) }
    }

    /// An endpoint that took the connection and did not answer the offer (nothing of ICE was tried).
    static func unanswered(_ protocolName: String, at endpoint: String, after: Duration) -> String {
        "the \(protocolName) endpoint at \(endpoint) did not answer the offer in " + String(format: "%.1f s", after.seconds)
            + " (is the URL a \(protocolName) endpoint, and is it up?)"
    }

    /// The statuses no retry mends, in the user's words.
    static func refusal(status: Int, endpoint: String, protocolName: String) -> String? {
        switch status {
        case 401, 403: "the \(protocolName) endpoint refused the token: \(endpoint) (HTTP \(status)): check the token (--token-env or --token-file)"
        case 404 where protocolName == "WHEP":
            "no \(protocolName) endpoint at \(endpoint) (HTTP 404): check the URL, or wait for the stream to go live with --wait-for-live (wait-for-live: true in a file)"
        case 404: "no \(protocolName) endpoint at \(endpoint) (HTTP 404): check the URL's path (shown as **** because it may hold a key)"
        default: nil
        }
    }

    /// Whether an error posted for a session is a refusal (the publisher then does not retry).
    static func isRefusal(_ reason: String) -> Bool {
        ["WHIP", "WHEP"].contains { reason.hasPrefix("the \($0) endpoint refused the token:") || reason.hasPrefix("no \($0) endpoint at") }
    }

    /// Ends the session at the endpoint: DELETE its resource (once; an endpoint that does not
    /// answer within the fetcher's timeout is left to time the session out itself).
    func close() async {
        closed.trip()
        guard let url = resource.withLock({ value -> URL? in defer { value = nil }; return value }) else { return }
        var headers: [String: String] = [:]
        if let token { headers["Authorization"] = "Bearer \(token.reveal())" }
        _ = try? await fetcher.fetch("DELETE", url, headers: headers, limit: 1 << 16)
    }
}
