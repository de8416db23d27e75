import Foundation
import GstKit
import PipelineConfig
import Synchronization

/// Plays a WebRTC stream from a WHEP endpoint: a receive-only transceiver for each stream the
/// pipeline uses (an audio-only listen offers audio alone), offered and answered as WHIP does
/// (`WHIPSession`), each stream into the stages as any source's; the connection is `WHEPLink`'s.
public final class WHEPSource: SourceComponent {
    public static let kind = "whep"
    public static let summary = "play a WebRTC stream from a WHEP endpoint (H.264 or VP8, and Opus)"
    public static let url = ConfigOption<String?>("url", required: true, help: "the WHEP endpoint, e.g. https://live.example.com/whep")
    public static let schema = OptionSchema(url, Credentials.token, Credentials.tokenFile, HLSSource.waitForLive, HLSSource.endAfter,
                                            WHIPSink.timeout, ICEServers.option, shorthand: "url")

    let endpoint: WHEPLink.Endpoint
    /// webrtcbin ends no stream when the far end stops sending: no media for this long ends them.
    let endAfter: Duration
    let context: ComponentContext
    private let wanted = Mutex<Set<StreamKind>>([.audio, .video])
    private let link = Mutex<WHEPLink?>(nil)

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let at = spec.keyPath
        let token = try Credentials.bearerToken(options, at: at)
        if let token { context.events.protect(token) }
        endpoint = WHEPLink.Endpoint(url: try WHIPSink.parse(url: options[Self.url] ?? "", at: "\(at).url", path: "whep"), token: token,
                                     certificate: try DTLSCertificate(), timeout: options[WHIPSink.timeout],
                                     waitForLive: options[HLSSource.waitForLive],
                                     iceServers: try ICEServers(options, at: at, events: context.events))
        endAfter = options[HLSSource.endAfter]
        self.context = context
    }

    nonisolated(nonsending) public func prepare(wanted streams: Set<StreamKind>) async throws {
        if !streams.isEmpty { wanted.withLock { $0 = streams } }
    }

    public func streams() throws -> [StreamKind: StreamForm] {
        Dictionary(uniqueKeysWithValues: wanted.withLock { $0 }.map { ($0, StreamForm.raw) })
    }

    /// H.264 or VP8 (the answer says which), kept encoded when nothing needs it decoded. Opus is
    /// always decoded here, where its stamps are evened out (see `WHEPLink.audioTolerance`).
    public func encodedForms() throws -> [StreamKind: StreamForm] {
        wanted.withLock { $0 }.contains(.video) ? [.video: .encoded(nil)] : [:]
    }

    public func makeBin(streams: [StreamKind: StreamForm], name: String) throws -> Bin {
        let bin = Bin(name: name)
        let made = try WHEPLink(endpoint: endpoint, streams: streams, in: bin, endAfter: endAfter, context: context)
        made.start()
        link.withLock { $0 = made }
        return bin
    }

    public var endsStreamsOnStop: Bool { true }

    public func willStop() { link.withLock { $0 }?.stop() }

    nonisolated(nonsending) public func finish() async {
        await link.withLock { value -> WHEPLink? in defer { value = nil }; return value }?.finish()
    }
}
