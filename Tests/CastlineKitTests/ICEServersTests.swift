import Testing
@testable import CastlineKit

/// `ice-servers` of a WebRTC sink or source: the forms webrtcbin takes, and one line for each mistake.
@Suite("ice-servers: STUN and TURN for WebRTC")
struct ICEServersTests {
    @Test("stun:/turn: HOST[:PORT] as webrtcbin's stun:// and turn://, the default ports, TLS's turns:")
    func forms() throws {
        #expect(try ICEServers.server("stun:stun.example.com", schemes: ["stun", "stuns"], at: "k") == "stun://stun.example.com:3478")
        #expect(try ICEServers.server("stun:10.0.0.1:19302", schemes: ["stun", "stuns"], at: "k") == "stun://10.0.0.1:19302")
        #expect(try ICEServers.server("turns:relay.example.com", schemes: ["turn", "turns"], at: "k") == "turns://relay.example.com:5349")
        #expect(try ICEServers.server("TURN:relay.example.com:80?transport=udp", schemes: ["turn", "turns"], at: "k") == "turn://relay.example.com:80")
    }

    @Test("each mistake is one error at its key, naming the fix", arguments: [
        ("stun: \"http://x\"", "sinks[0].whip.ice-servers.stun", "is not a stun: URL"),
        ("stun: \"stun:host:99999\"", "sinks[0].whip.ice-servers.stun", "names no HOST[:PORT]"),
        ("turn: \"turn:relay:3478\"", "sinks[0].whip.ice-servers", "needs username and credential"),
        ("relay-only: true", "sinks[0].whip.ice-servers", "relay-only needs a relay"),
        ("username: u, credential: secret", "sinks[0].whip.ice-servers", "need a relay"),
        ("turn: \"turn:relay\", username: u, credential: a, credential-file: /x", "sinks[0].whip.ice-servers", "not both"),
    ])
    func mistakes(_ given: String, keyPath: String, says: String) throws {
        let yaml = """
            version: 1
            name: ice
            source: { test: {} }
            stages: [ { encode: { video: { profile: constrained-baseline }, audio: { codec: opus } } } ]
            sinks: [ { whip: { url: "http://127.0.0.1:1/whip", ice-servers: { \(given) } } } ]
            """
        do {
            _ = try PipelineRunner(spec: try loadSpec(yaml), registry: .builtin)
            Issue.record("\(given) was taken")
        } catch let error as BuildError {
            #expect(error.keyPath == keyPath && error.message.contains(says), "\(error)")
            #expect(!error.message.contains("secret"), "a secret in an error: \(error)")
        }
    }
}
