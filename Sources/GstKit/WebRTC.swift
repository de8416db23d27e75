import CGStreamer
import CGStreamerShim
import GLibSupport

/// webrtcbin's signals that take a promise or a session description (see castline_webrtc.c).
public enum WebRTC {
    /// `webrtcbin`'s "connection-state" (GstWebRTCPeerConnectionState).
    public enum ConnectionState: Int, Sendable {
        case new = 0, connecting, connected, disconnected, failed, closed
    }
}

private typealias OfferHandler = @Sendable (Result<String, GstError>) -> Void

private let offerReady: castline_sdp_ready = { sdp, error, data in
    guard let handler = CallbackBox<OfferHandler>.from(data) else { return }
    defer { CallbackBox<OfferHandler>.release(data) }
    if let sdp {
        handler(.success(String(cString: sdp)))
        g_free(sdp)
    } else {
        handler(.failure(.other(error.map { String(cString: $0) } ?? "no offer")))
    }
}

private typealias StatsHandler = @Sendable (Structure?) -> Void

private let statsReady: castline_stats_ready = { stats, data in
    guard let handler = CallbackBox<StatsHandler>.from(data) else { return }
    defer { CallbackBox<StatsHandler>.release(data) }
    handler(stats.map(Structure.init(owning:)))
}

extension Element {
    /// webrtcbin: makes an offer, sets it as the local description, and hands over the local
    /// description's SDP once ICE gathering is complete (candidates in it: no trickle needed).
    /// `done` runs once, on one of webrtcbin's threads.
    public func makeOffer(_ done: @escaping @Sendable (Result<String, GstError>) -> Void) {
        castline_webrtc_offer(pointer, offerReady, CallbackBox<OfferHandler>(done).retainedPointer())
    }

    /// webrtcbin: sets the far end's answer as the remote description.
    public func setAnswer(_ sdp: String) throws(GstError) {
        var error: UnsafeMutablePointer<gchar>?
        guard castline_webrtc_set_answer(pointer, sdp, &error) != 0 else {
            throw .other(takeString(error) ?? "the answer was refused")
        }
    }

    /// webrtcbin: a receive-only transceiver offering `caps` (a structure per codec, preferred first).
    public func addReceiver(_ caps: Caps) throws(GstError) {
        guard castline_webrtc_add_receiver(pointer, caps.pointer) != 0 else { throw .other("webrtcbin took no transceiver for \(caps)") }
    }

    /// webrtcbin: a TURN relay, `turn(s)://USER:PASSWORD@HOST:PORT`, added through the signal so that
    /// no dump of the element's properties shows it (the error names no part of it either).
    public func addTurnServer(_ uri: String) throws(GstError) {
        guard castline_webrtc_add_turn_server(pointer, uri) != 0 else { throw .other("webrtcbin refused the TURN relay's URL") }
    }

    /// webrtcbin's peer connection state.
    public var connectionState: WebRTC.ConnectionState? { int("connection-state").flatMap(WebRTC.ConnectionState.init) }

    /// webrtcbin's statistics ("get-stats"): one structure per statistic, named by its type
    /// ("outbound-rtp", "remote-inbound-rtp", "candidate-pair"…), as webrtcbin's thread answers.
    public func webRTCStats() async -> Structure? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Structure?, Never>) in
            castline_webrtc_stats(pointer, statsReady, CallbackBox<StatsHandler>({ continuation.resume(returning: $0) }).retainedPointer())
        }
    }
}

extension Pad {
    /// A webrtcbin pad's transceiver direction, by its nick: "sendonly", "recvonly", "sendrecv".
    @discardableResult
    public func setTransceiverDirection(_ direction: String) -> Bool {
        castline_webrtc_set_direction(pointer, direction) != 0
    }
}
