import Foundation
import GstKit
import PipelineConfig

/// Publishes over WebRTC to a WHIP endpoint (RFC 9725): MediaMTX, Cloudflare Stream, OBS's and
/// FFmpeg's peers. H.264 as the encode stage makes it (constrained baseline, which every WebRTC
/// peer decodes) and Opus; a publish of its own, reconnecting with backoff as `rtmp` does. The
/// bearer token is a secret (`${VAR}` or `token-file`).
public final class WHIPSink: SinkComponent {
    public static let kind = "whip"
    public static let summary = "publish over WebRTC to a WHIP endpoint (H.264 and Opus), reconnecting on failure"
    public static let url = ConfigOption<String?>("url", required: true, help: "the WHIP endpoint, e.g. https://live.example.com/whip")
    public static let timeout = ConfigOption<Duration>("timeout", default: .seconds(5),
                                                       help: "how long the endpoint may take to answer a request")
    public static let schema = OptionSchema(url, Credentials.token, Credentials.tokenFile, timeout, PublishOptions.maxReconnects,
                                            ICEServers.option)

    let endpoint: URL
    let token: Secret?
    let timeout: Duration
    let maxReconnects: Int?
    let certificate: DTLSCertificate
    let iceServers: ICEServers
    let context: ComponentContext
    private let publisher = PublisherSlot()

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let at = spec.keyPath
        endpoint = try Self.parse(url: options[Self.url] ?? "", at: "\(at).url")
        token = try Credentials.bearerToken(options, at: at)
        if let token { context.events.protect(token) }
        timeout = options[Self.timeout]
        maxReconnects = options[PublishOptions.maxReconnects]
        certificate = try DTLSCertificate()
        iceServers = try ICEServers(options, at: at, events: context.events)
        self.context = context
    }

    /// A WHIP (or, `path` "whep", WHEP) endpoint's URL, credentials kept out of it.
    static func parse(url text: String, at keyPath: String, path: String = "whip") throws -> URL {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty else {
            throw BuildError("\"\(text)\" is not an http(s) URL (try https://live.example.com/\(path))", at: keyPath)
        }
        guard url.user == nil, url.password == nil else {
            throw BuildError("the credentials do not go in the URL, where they would show (use token: ${VAR})", at: keyPath)
        }
        try requireValidPort(url.port, at: keyPath)
        return url
    }

    public static var isDestination: Bool { true }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        stream == .video ? .encoded([.h264]) : .encoded([.opus, .aac])
    }

    public func framing(for stream: StreamKind) -> String? {
        stream == .video ? "video/x-h264,stream-format=byte-stream,alignment=au" : nil
    }

    /// What every WebRTC peer decodes, and what the offer says (a file's High, with B-frames, is not).
    public var h264Profile: String? { "constrained-baseline" }

    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        var audio: Codec?
        if case .encoded(let codec)? = inputs[.audio] { audio = codec }
        let output = WHIPOutput(endpoint: endpoint, token: token, audio: audio, certificate: certificate, timeout: timeout,
                                iceServers: iceServers, notice: { [context] in context.events.emit(.notice("\(context.componentName): \($0)")) })
        return try publisher.makeBin(inputs: inputs, name: name, framing: { [self] in framing(for: $0) }, pacing: .clockUnlessLive, output: output,
                              maxReconnects: maxReconnects, context: context)
    }

    public var destinationName: String? { Secret.maskingPath(of: endpoint) }

    public var ownPipelines: [Pipeline] { publisher.ownPipelines }

    nonisolated(nonsending) public func finish(completed: Bool) async -> SinkVerdict {
        await publisher.finish(drain: .seconds(2))
    }
}
