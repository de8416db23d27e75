import Foundation

public struct IngestOptions: Sendable {
    public var host: String = "127.0.0.1"
    public var rtmpPort: Int? = nil      // nil: a free port
    public var rtmpsPort: Int? = nil
    public var httpPort: Int? = nil
    public var fragment: Duration = .seconds(2)          // hls_fragment
    public var playlistLength: Duration = .seconds(30)   // hls_playlist_length
    /// nil: any key may publish; else other keys are refused (on_publish → /auth → 403).
    /// Keys may contain letters, digits and `- _ . ~` (not starting with `~`).
    public var allowedKeys: Set<String>? = nil
    /// nil: a fresh temp dir, removed on stop. A given directory is created if needed and kept.
    public var workDirectory: String? = nil
    /// nil: $CASTLINE_NGINX_RTMP_MODULE, else /usr/lib/nginx/modules/ngx_rtmp_module.so and
    /// other usual places.
    public var rtmpModulePath: String? = nil

    public init(host: String = "127.0.0.1", rtmpPort: Int? = nil, rtmpsPort: Int? = nil, httpPort: Int? = nil,
                fragment: Duration = .seconds(2), playlistLength: Duration = .seconds(30),
                allowedKeys: Set<String>? = nil, workDirectory: String? = nil, rtmpModulePath: String? = nil) {
        self.host = host
        self.rtmpPort = rtmpPort
        self.rtmpsPort = rtmpsPort
        self.httpPort = httpPort
        self.fragment = fragment
        self.playlistLength = playlistLength
        self.allowedKeys = allowedKeys
        self.workDirectory = workDirectory
        self.rtmpModulePath = rtmpModulePath
    }
}

public struct IngestEndpoints: Sendable, Equatable {
    public var host: String
    public var rtmpPort: Int
    public var rtmpsPort: Int
    public var httpPort: Int
    public var rtmpURL: String           // "rtmp://127.0.0.1:PORT/live"
    public var rtmpsURL: String          // "rtmps://127.0.0.1:PORT/live"
    public var httpBaseURL: String       // "http://127.0.0.1:PORT"
    public var statURL: String           // nginx-rtmp rtmp_stat XML
    public var caFile: String            // PEM of the generated CA, for --ca-file
    public var certificateFile: String   // PEM of the server certificate (leaf)
    public var certificateSHA256: String // server certificate fingerprint "AB:CD:..."
    public var workDirectory: String
    public var hlsDirectory: String      // where nginx-rtmp writes KEY.m3u8 and KEY-N.ts
    public var accessLogPath: String     // rtmp access log: one line per finished RTMP session
    public var nginxErrorLogPath: String
    public var stunnelLogPath: String

    public init(host: String, rtmpPort: Int, rtmpsPort: Int, httpPort: Int, caFile: String, certificateFile: String,
                certificateSHA256: String, workDirectory: String) {
        // URLs are for connecting: a server bound to every interface is reached here on loopback.
        let reachable = Self.everyInterface.contains(host) ? "127.0.0.1" : host
        let h = reachable.contains(":") ? "[\(reachable)]" : reachable
        self.host = host
        self.rtmpPort = rtmpPort
        self.rtmpsPort = rtmpsPort
        self.httpPort = httpPort
        self.rtmpURL = "rtmp://\(h):\(rtmpPort)/live"
        self.rtmpsURL = "rtmps://\(h):\(rtmpsPort)/live"
        self.httpBaseURL = "http://\(h):\(httpPort)"
        self.statURL = "http://\(h):\(httpPort)/stat"
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.certificateSHA256 = certificateSHA256
        self.workDirectory = workDirectory
        self.hlsDirectory = workDirectory + "/hls"
        self.accessLogPath = workDirectory + "/logs/rtmp-access.log"
        self.nginxErrorLogPath = workDirectory + "/logs/nginx-error.log"
        self.stunnelLogPath = workDirectory + "/logs/stunnel.log"
    }

    /// The host names that bind every interface, none of which is an address to connect to.
    static let everyInterface: Set<String> = ["0.0.0.0", "::", ""]
    /// Bound to every interface: the URLs say 127.0.0.1, and other machines use this one's address.
    public var listensOnEveryInterface: Bool { Self.everyInterface.contains(host) }

    /// "http://127.0.0.1:PORT/hls/KEY.m3u8"
    public func hlsPlaylistURL(key: String) -> String { "\(httpBaseURL)/hls/\(key).m3u8" }
    /// "http://127.0.0.1:PORT/hls/<key>.m3u8"
    public var hlsURLPattern: String { hlsPlaylistURL(key: "<key>") }
    /// "rtmp://127.0.0.1:PORT/live/KEY"
    public func rtmpPublishURL(key: String) -> String { "\(rtmpURL)/\(key)" }
    /// "rtmps://127.0.0.1:PORT/live/KEY"
    public func rtmpsPublishURL(key: String) -> String { "\(rtmpsURL)/\(key)" }
}

public enum IngestError: Error, Sendable, CustomStringConvertible {
    case missingProgram(name: String, debianPackage: String)
    case startFailed(program: String, log: String)
    case portInUse(Int)
    case certificateFailed(String)
    case invalidStreamKey(String)
    case workDirectory(path: String, message: String)
    case notStarted
    case statUnavailable(String)
    case addressUnavailable(host: String, message: String)

    public var description: String {
        switch self {
        case .missingProgram(let name, let package):
            return "\(name) is not installed (apt-get install \(package))"
        case .startFailed(let program, let log):
            let tail = log.trimmingCharacters(in: .whitespacesAndNewlines)
            return "\(program) failed to start" + (tail.isEmpty ? "" : ":\n\(tail)")
        case .portInUse(let port):
            return "port \(port) is already in use (pick another port, or stop what listens there)"
        case .certificateFailed(let message):
            return "could not generate the TLS certificates: \(message)"
        case .invalidStreamKey(let key):
            // Not the key itself: it is a secret. Its length tells which of several it is.
            return "an allowed stream key (of \(key.count) characters) has a character nginx-rtmp cannot take "
                + "(use letters, digits, '-', '_', '.', and '~' but not first)"
        case .workDirectory(let path, let message):
            return "cannot use work directory \(path): \(message)"
        case .notStarted:
            return "the local ingest is not started"
        case .statUnavailable(let message):
            return "nginx-rtmp statistics unavailable: \(message)"
        case .addressUnavailable(let host, let message):
            return "cannot listen on \(host): \(message)"
        }
    }
}
