import Foundation
import LocalIngest
import Logging
import ServiceLifecycle

/// `castline ingest`: the local nginx-rtmp behind stunnel, as a Service until
/// SIGINT or SIGTERM; prints its URLs once it runs, removes its files when it stops.
public struct IngestSession: Service {
    let options: IngestOptions

    public init(options: IngestOptions) {
        self.options = options
    }

    /// Runs the ingest until a stop signal (only `allowedKeys` may publish, when any are given); the exit status.
    public static func run(_ options: IngestOptions, allowedKeys: [String] = []) async -> Int32 {
        var options = options
        if !allowedKeys.isEmpty { options.allowedKeys = Set(allowedKeys) }
        var logger = Logger(label: "castline.ingest", factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical
        let group = ServiceGroup(services: [IngestSession(options: options)], gracefulShutdownSignals: [.sigint, .sigterm, .sighup],
                                 logger: logger)
        do {
            try await group.run()
            return 0
        } catch let error as IngestError {
            Terminal.status("ingest: \(error)")
            // A port or address the user gave that cannot be had is bad input, as a bad flag is.
            switch error {
            case .portInUse, .addressUnavailable: return ExitStatus.badInput
            default: return ExitStatus.failed
            }
        } catch {
            Terminal.status("ingest: \(error)")
            return ExitStatus.failed
        }
    }

    public func run() async throws {
        let server = IngestServer(options: options)
        let endpoints = try await server.start()
        print("rtmp publish:  \(endpoints.rtmpURL)/<key>")
        print("rtmps publish: \(endpoints.rtmpsURL)/<key>   (--ca-file \(endpoints.caFile))")
        print("hls playback:  \(endpoints.hlsURLPattern)")
        print("certificate sha256: \(endpoints.certificateSHA256)")
        if endpoints.listensOnEveryInterface {
            print("listening on every interface: from another machine, put this machine's address in place of 127.0.0.1")
        }
        // Ready to paste: the key goes apart from the URL (pasted onto it, the server refuses the app).
        // With allowed keys, `test` would be refused; the allowed keys are not printed.
        let open = options.allowedKeys?.isEmpty ?? true
        let key = open ? "test" : "KEY"
        print("try:           export STREAM_KEY=\(open ? key : "<an allowed key>")")
        print("               castline broadcast \(endpoints.rtmpURL) --key-env STREAM_KEY")
        print("               castline listen \(endpoints.hlsPlaylistURL(key: key))")
        fflush(nil)  // a script reading the URLs must not wait for exit
        Terminal.status("ingest running; Ctrl-C stops it")
        // Until a stop signal, or until nginx or stunnel is gone (killed, crashed): an ingest that
        // says it runs while publishers are refused would be a lie.
        let serverGone = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                try? await gracefulShutdown()
                return false
            }
            group.addTask {
                while (try? await Task.sleep(for: .seconds(1))) != nil {
                    if await !server.isRunning { return true }
                }
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        await server.stop()
        if serverGone { throw IngestStopped() }
        Terminal.status("ingest stopped")
    }
}

/// nginx or stunnel ended while the ingest ran.
struct IngestStopped: Error, CustomStringConvertible {
    var description: String { "nginx or stunnel stopped on its own, so publishers were refused: the ingest ends (start it again)" }
}
