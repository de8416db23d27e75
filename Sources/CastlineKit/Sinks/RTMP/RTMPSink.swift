import Foundation
import GstKit
import PipelineConfig

/// Publishes H.264/AAC over RTMP or RTMPS, reconnecting with backoff when the
/// connection drops. The stream key comes from `key` (use `${VAR}`) or
/// `key-file`, and is shown as `****` everywhere.
public final class RTMPSink: SinkComponent {
    public static let kind = "rtmp"
    public static let summary = "publish to an RTMP/RTMPS ingest (Mux, YouTube, nginx-rtmp), reconnecting on failure"
    public static let url = ConfigOption<String?>("url", required: true, help: "ingest URL without the key, e.g. rtmps://global-live.mux.com:443/app")
    public static let caFile = ConfigOption<String?>("ca-file", help: "rtmps: trust the CAs in this PEM file instead of the system's")
    public static let fingerprint = ConfigOption<String?>("fingerprint", help: "rtmps: accept only the server certificate with this SHA-256 fingerprint")
    public static let insecure = ConfigOption<Bool>("insecure", default: false, help: "rtmps: do not validate the certificate (said on every start)")
    public static let schema = OptionSchema(url, Credentials.key, Credentials.keyFile, caFile, fingerprint, insecure,
                                            PublishOptions.maxReconnects)

    /// How an rtmps connection is trusted.
    enum Trust: Equatable {
        case system, caFile(String), fingerprint(String), insecure
    }

    struct Endpoint: Equatable {
        let secure: Bool
        let host: String
        let port: Int
        /// The application path, e.g. `app` or `live`.
        let application: String

        /// `rtmps://host:443`: the server, without the application.
        var server: String { "\(secure ? "rtmps" : "rtmp")://\(host):\(port)" }
        var displayURL: String { "\(server)/\(application)" }
    }

    let endpoint: Endpoint
    let key: Secret
    let trust: Trust
    let maxReconnects: Int?
    let context: ComponentContext
    private let connector = Connector()

    public init(spec: ComponentSpec, context: ComponentContext) throws {
        let options = spec.options
        let at = spec.keyPath
        endpoint = try Self.parse(url: options[Self.url] ?? "", at: "\(at).url")
        key = try Credentials.streamKey(options, at: at)
        context.events.protect(key)
        trust = try Self.trust(options, secure: endpoint.secure, at: at)
        maxReconnects = options[PublishOptions.maxReconnects]
        self.context = context
    }

    static func parse(url text: String, at keyPath: String) throws -> Endpoint {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased() else {
            throw BuildError("\"\(text)\" is not a URL (try rtmps://global-live.mux.com:443/app)", at: keyPath)
        }
        guard scheme == "rtmp" || scheme == "rtmps" else {
            throw BuildError("unknown scheme \"\(scheme)\" (use rtmp:// or rtmps://; srt:// is the srt sink's, "
                             + "a WHIP endpoint https://HOST/…/whip the whip sink's)", at: keyPath)
        }
        // rtmp2sink sends the app without a query (it would be dropped unsaid); after the key it goes through.
        if url.query?.isEmpty == false {
            // Not echoed: a query often carries a token.
            throw BuildError("the URL has a query (?…), which rtmp2sink does not send with the app: give the URL "
                             + "without it, and the query after the stream key (key: KEY?QUERY)", at: keyPath)
        }
        guard let host = url.host, !host.isEmpty else {
            throw BuildError("\"\(text)\" has no host (try rtmps://global-live.mux.com:443/app)", at: keyPath)
        }
        try requireValidPort(url.port, at: keyPath)
        let application = url.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        guard !application.isEmpty else {
            throw BuildError("\"\(text)\" has no application path (add it, e.g. \(scheme)://\(host)/app; the key goes in key:)", at: keyPath)
        }
        let secure = scheme == "rtmps"
        return Endpoint(secure: secure, host: host, port: url.port ?? (secure ? 443 : 1935), application: application)
    }

    static func trust(_ options: OptionValues, secure: Bool, at keyPath: String) throws -> Trust {
        var chosen: [(String, Trust)] = []
        if let given = options[caFile] {
            // GIO takes an absolute path only (a relative one was a GLib warning, then "unknown CA").
            let path = given.hasPrefix("/") ? given
                : URL(fileURLWithPath: given, relativeTo: URL(fileURLWithPath: FileManager.default.currentDirectoryPath)).path
            guard FileManager.default.isReadableFile(atPath: path) else {
                throw BuildError("cannot read the CA file \"\(path)\" (check the path)", at: "\(keyPath).ca-file")
            }
            chosen.append(("ca-file", .caFile(path)))
        }
        if let text = options[fingerprint] {
            let hex = text.replacingOccurrences(of: ":", with: "").lowercased()
            guard hex.count == 64, hex.allSatisfy(\.isHexDigit) else {
                throw BuildError("\"\(text)\" is not a SHA-256 fingerprint (64 hex digits, colons allowed)", at: "\(keyPath).fingerprint")
            }
            chosen.append(("fingerprint", .fingerprint(hex)))
        }
        if options[insecure] { chosen.append(("insecure", .insecure)) }
        guard chosen.count <= 1 else {
            throw BuildError("give only one of \(chosen.map(\.0).joined(separator: ", "))", at: keyPath)
        }
        guard let (name, trust) = chosen.first else { return .system }
        guard secure else {
            throw BuildError("\(name) applies to rtmps:// URLs only (use rtmps://, or remove \(name))", at: "\(keyPath).\(name)")
        }
        return trust
    }

    public static var isDestination: Bool { true }

    public func requirement(for stream: StreamKind) -> FormRequirement? {
        stream == .video ? .encoded([.h264]) : .encoded([.aac])
    }

    nonisolated(nonsending) public func preflight() async throws {
        if trust == .insecure {
            context.events.emit(.warning("TLS certificate validation is off for \(endpoint.displayURL) (insecure: true)"))
        }
        try await connector.prepare(endpoint: endpoint, trust: trust)
    }

    public func framing(for stream: StreamKind) -> String? {
        stream == .video ? "video/x-h264,stream-format=avc,alignment=au" : StreamPublisher.aacFraming
    }

    /// Appsinks in the main pipeline; the publishing pipeline is the `StreamPublisher`'s.
    public func makeBin(inputs: [StreamKind: StreamForm], name: String) throws -> Bin {
        let endpoint = endpoint, key = key, connector = connector
        let output = RTMPOutput(
            location: { [events = context.events] in
                let location = try connector.location(endpoint: endpoint, key: key)
                // Masked where it is used: a location is a URL whose last part is the key.
                events.protect(use: location, masked: String(location.dropLast(key.reveal().count)) + "****")
                return location
            },
            insecureTLS: trust == .insecure, endpoint: endpoint)
        let (bin, publisher) = try StreamPublisher.entry(
            inputs: inputs, name: name,
            framing: { [self] in framing(for: $0) },
            output: output, maxReconnects: maxReconnects, context: context)
        connector.publisher = publisher
        return bin
    }

    public var destinationName: String? { endpoint.displayURL }

    public var ownPipelines: [Pipeline] { connector.publisher?.unstartedPipeline().map { [$0] } ?? [] }

    nonisolated(nonsending) public func finish(completed: Bool) async -> SinkVerdict {
        defer { connector.close() }
        // No publisher: stopped while the far end was checked, before the graph was built.
        return await connector.publisher?.finish(drain: .seconds(5)) ?? StreamPublisher.endedBeforeMedia(endpoint.displayURL)
    }
}
