import Foundation
import GIONet
import Synchronization

/// Where rtmp2sink connects. rtmp2sink validates TLS against the system store
/// only, so for a CA file or a pinned fingerprint castline carries the TLS
/// itself: a loopback relay on GIO's TLS in front of a plain-RTMP rtmp2sink.
final class Connector: Sendable {
    private struct State {
        var relay: TLSRelay?
        var publisher: StreamPublisher?
    }

    private let state = Mutex(State())

    var publisher: StreamPublisher? {
        get { state.withLock { $0.publisher } }
        set { state.withLock { $0.publisher = newValue } }
    }

    /// Checks the host name resolves, and for rtmps the server's certificate, before anything
    /// starts; off the caller's executor, and given up at once when the task is cancelled (a stop).
    func prepare(endpoint: RTMPSink.Endpoint, trust: RTMPSink.Trust) async throws {
        do {
            try await Cancellable.blocking { cancellable throws(GIONetError) in try HostCheck.resolve(endpoint.host, cancellable: cancellable) }
        } catch let error as GIONetError {
            throw BuildError("cannot resolve \(endpoint.host): \(error) (check the URL)")
        }
        guard endpoint.secure else { return }
        let relayTrust: TLSTrust
        switch trust {
        case .system: relayTrust = .system
        case .insecure: return
        case .caFile(let path): relayTrust = .caFile(path)
        case .fingerprint(let hex): relayTrust = .fingerprint(hex)
        }
        do {
            try await Cancellable.blocking { cancellable throws(GIONetError) in
                try TLSRelay.check(remoteHost: endpoint.host, remotePort: endpoint.port, trust: relayTrust, cancellable: cancellable)
            }
        } catch let error as GIONetError {
            throw BuildError("\(error)")
        }
        guard trust != .system else { return }
        let relay = TLSRelay(remoteHost: endpoint.host, remotePort: endpoint.port, trust: relayTrust)
        _ = try relay.start()
        state.withLock { $0.relay = relay }
    }

    /// rtmp2sink's location, key included: used only to set the property.
    func location(endpoint: RTMPSink.Endpoint, key: Secret) throws -> String {
        let path = "\(endpoint.application)/\(key.reveal())"
        if let port = state.withLock({ $0.relay?.localPort }) {
            return "rtmp://127.0.0.1:\(port)/\(path)"
        }
        return "\(endpoint.secure ? "rtmps" : "rtmp")://\(endpoint.host):\(endpoint.port)/\(path)"
    }

    func close() {
        let relay = state.withLock { state in
            defer { state.relay = nil }
            return state.relay
        }
        relay?.stop()
    }
}
