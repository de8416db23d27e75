import Foundation
import GstKit
import PipelineConfig

/// How a WebRTC connection (a `whip` sink's, a `whep` source's) finds its way to the far end
/// across NATs and firewalls: a STUN server to learn its public address, a TURN relay to send
/// through (its password a secret), and whether only the relay may be used.
struct ICEServers: Sendable {
    static let stun = ConfigOption<String?>("stun", help: "a STUN server: stun:HOST[:PORT]")
    static let turn = ConfigOption<String?>("turn", help: "a TURN relay: turn:HOST[:PORT] (turns: over TLS)")
    static let username = ConfigOption<String?>("username", help: "the TURN relay's user name")
    static let credential = ConfigOption<Secret?>("credential", help: "the TURN relay's password; write ${VAR} to read it from the environment")
    static let credentialFile = ConfigOption<String?>("credential-file", help: "a file holding the TURN relay's password (instead of credential)")
    static let relayOnly = ConfigOption<Bool>("relay-only", default: false,
                                              help: "connect through the TURN relay only (ICE transport policy relay): to test a relay")
    static let schema = OptionSchema(stun, turn, username, credential, credentialFile, relayOnly)
    static let option = ConfigOption<OptionValues?>("ice-servers", .object(schema), help: "STUN and TURN servers for the WebRTC connection")

    /// webrtcbin's forms: `stun://HOST:PORT`, `turn(s)://USER:PASSWORD@HOST:PORT`.
    let stunServer: String?
    let turnServer: Secret?
    let relayOnly: Bool

    static let none = ICEServers(stunServer: nil, turnServer: nil, relayOnly: false)

    private init(stunServer: String?, turnServer: Secret?, relayOnly: Bool) {
        (self.stunServer, self.turnServer, self.relayOnly) = (stunServer, turnServer, relayOnly)
    }

    /// The `ice-servers` of a component's options; the relay's password is protected in `events`,
    /// as given and as it stands in the relay's URL.
    init(_ options: OptionValues, at parent: String, events: EventEmitter) throws {
        let at = "\(parent).\(Self.option.field.name)"
        guard let given = options[Self.option] else { self = .none; return }
        stunServer = try given[Self.stun].map { try Self.server($0, schemes: ["stun", "stuns"], at: "\(at).stun") }
        relayOnly = given[Self.relayOnly]
        let password = try Credentials.secret(given, Self.credential, Self.credentialFile, named: "TURN password", at: at)
        guard let turn = given[Self.turn] else {
            if password != nil || given[Self.username] != nil { throw BuildError("a user name and password need a relay (turn: turn:HOST:PORT)", at: at) }
            if relayOnly { throw BuildError("relay-only needs a relay (turn: turn:HOST:PORT)", at: at) }
            turnServer = nil
            return
        }
        guard let username = given[Self.username], !username.isEmpty, let password else {
            throw BuildError("a TURN relay needs username and credential (credential: ${TURN_PASSWORD})", at: at)
        }
        let relay = try Self.server(turn, schemes: ["turn", "turns"], at: "\(at).turn")
        // The URL's user and password parts: percent-encoded, so a ':' or '@' in them parses.
        let allowed = CharacterSet.urlUserAllowed.subtracting(CharacterSet(charactersIn: ":@"))
        let user = username.addingPercentEncoding(withAllowedCharacters: allowed) ?? username
        let encoded = password.reveal().addingPercentEncoding(withAllowedCharacters: allowed) ?? password.reveal()
        events.protect(password)
        events.protect(Secret(encoded))
        turnServer = Secret(relay.replacingOccurrences(of: "://", with: "://\(user):\(encoded)@"))
    }

    /// `stun:HOST[:PORT]` (RFC 7064) as `stun://HOST:PORT`, port 3478 (5349 over TLS) when none is given.
    static func server(_ text: String, schemes: [String], at keyPath: String) throws -> String {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let scheme = parts.first.map { $0.lowercased() } ?? ""
        guard parts.count == 2, schemes.contains(scheme) else {
            throw BuildError("\"\(text)\" is not a \(schemes[0]): URL (try \(schemes[0]):relay.example.com:3478)", at: keyPath)
        }
        var rest = String(parts[1]).replacingOccurrences(of: "//", with: "")
        if let query = rest.firstIndex(of: "?") { rest = String(rest[..<query]) }
        let hostPort = rest.split(separator: ":", omittingEmptySubsequences: false)
        guard let host = hostPort.first, !host.isEmpty, hostPort.count <= 2,
              hostPort.count == 1 || Int(hostPort[1]).map({ (1...65535).contains($0) }) == true else {
            throw BuildError("\"\(text)\" names no HOST[:PORT] (try \(schemes[0]):relay.example.com:3478)", at: keyPath)
        }
        let port = hostPort.count == 2 ? String(hostPort[1]) : (scheme.hasSuffix("s") ? "5349" : "3478")
        return "\(scheme)://\(host):\(port)"
    }

    /// A webrtcbin as both directions use it: one transport for every stream (max-bundle), and
    /// these servers set before it gathers candidates.
    func webrtcbin() throws -> Element {
        let webrtc = try ElementCatalog.make("webrtcbin")
        try webrtc.set("bundle-policy", text: "max-bundle")
        try apply(to: webrtc)
        return webrtc
    }

    private func apply(to webrtc: Element) throws {
        if let stunServer { try webrtc.set("stun-server", stunServer) }
        if let turnServer { try webrtc.addTurnServer(turnServer.reveal()) }
        if relayOnly { try webrtc.set("ice-transport-policy", text: "relay") }
    }
}

/// The candidate pair ICE chose, from webrtcbin's statistics. Found by the ids the pair names:
/// webrtcbin 1.22 files each candidate under the other's type ("local-candidate" holds the far
/// end's), so the type names cannot be trusted and the ids can.
struct ICECandidatePair: Sendable, Equatable, CustomStringConvertible {
    struct Candidate: Sendable, Equatable, CustomStringConvertible {
        /// host, srflx, prflx or relay.
        var type: String
        var address: String
        var port: Int?
        var transport: String

        /// `relay 192.0.2.2:49160 (udp)`; an IPv6 address in brackets before its port.
        var description: String {
            let host = address.contains(":") ? "[\(address)]" : address
            return "\(type) \(host)\(port.map { ":\($0)" } ?? "") (\(transport))"
        }
    }

    var local: Candidate
    var remote: Candidate

    init?(_ stats: Structure) {
        var candidates: [String: Candidate] = [:]
        var pair: (local: String, remote: String)?
        for field in stats.fieldNames {
            guard let stat = stats.structure(field) else { continue }
            if stat.name == "candidate-pair", pair == nil, let local = stat.string("local-candidate-id"), let remote = stat.string("remote-candidate-id") {
                pair = (local, remote)
            } else if stat.name.hasSuffix("-candidate"), let id = stat.string("id"), let type = stat.string("candidate-type") {
                candidates[id] = Candidate(type: type, address: stat.string("address") ?? "?", port: stat.int("port"),
                                           transport: stat.string("protocol") ?? "udp")
            }
        }
        guard let pair, let local = candidates[pair.local], let remote = candidates[pair.remote] else { return nil }
        (self.local, self.remote) = (local, remote)
    }

    var description: String { "ICE pair: this end \(local), the far end \(remote)" }
    /// 1 when this end sends through a TURN relay (`ice_relayed`).
    var relayed: Double { local.type == "relay" ? 1 : 0 }
}
