import Foundation
import Hummingbird
import NIOCore
import Logging
import ServiceLifecycle
import Synchronization

/// A Hummingbird server for the length of a run (`--metrics`, `--control`): the
/// one way castline serves HTTP. A Service in the run's group; `listening()`
/// returns the port once it listens and throws when it cannot (port taken, bad host).
struct HTTPServer: Service {
    private let application: any Service
    private let started: OneShot<Int>
    /// What a failure to listen says: `--control: cannot listen on 127.0.0.1:7070`.
    private let cannotListen: String

    init(_ responder: some HTTPResponder<BasicRequestContext>, endpoint: Endpoint, flag: String, label: String) {
        // Hummingbird's own log lines would land on stdout, which may be carrying JSON lines.
        var logger = Logger(label: label, factory: { StreamLogHandler.standardError(label: $0) })
        logger.logLevel = .critical  // stopping it at the end of a run logs harmless errors
        let started = OneShot<Int>()
        application = Application(
            responder: responder,
            // A connection that sends no request part for 10 s is closed: a half-sent head
            // (a slow client) or a body that stops coming. A response being written (/events) is not idle.
            server: .http1(configuration: .init(idleTimeout: .seconds(10))),
            configuration: .init(address: .hostname(endpoint.host, port: endpoint.port), serverName: nil),
            // Port 0 (`--ui`) listens on a port the system picks: the one to print.
            onServerRunning: { channel in started.resume(with: .success(channel.localAddress?.port ?? endpoint.port)) },
            logger: logger)
        self.started = started
        cannotListen = "\(flag): cannot listen on \(endpoint.host):\(endpoint.port)"
    }

    /// How long requests still open may hold the exit once the run is over (the pipelines have
    /// drained by then; the servers stop last).
    static let shutdownGrace: Duration = .milliseconds(500)

    func run() async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [application, started, cannotListen] in
                do {
                    try await application.run()
                } catch {
                    let failure = SettingsError("\(cannotListen): \(Self.why(error))")
                    started.resume(with: .failure(failure))
                    throw failure
                }
            }
            // Hummingbird's graceful shutdown waits for every request in flight, and a client that
            // never sends the body it announced would hold Ctrl-C for as long as it likes.
            group.addTask {
                try await gracefulShutdown()
                try await Task.sleep(for: Self.shutdownGrace)
            }
            // Whichever ends first ends the other: a cancelled Hummingbird closes what is open.
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Why the socket could not listen, in the system's words and with the fix, not as NIO's call.
    static func why(_ error: any Error) -> String {
        guard let failure = error as? IOError else { return "\(error)" }
        let said = String(cString: strerror(failure.errnoCode)).lowercased()
        switch failure.errnoCode {
        case EADDRINUSE: return "\(said) (pick another port, or stop what listens there)"
        case EADDRNOTAVAIL: return "\(said) (give an address of this machine, e.g. 127.0.0.1 or 0.0.0.0)"
        case EACCES: return "\(said) (ports under 1024 need privileges: pick a higher one)"
        default: return said
        }
    }

    /// Returns once the server listens; throws a printable line when it cannot.
    @discardableResult
    func listening() async throws -> Int {
        try await started.wait()
    }
}

/// A result delivered once, to one waiter, whichever comes first.
final class OneShot<Value: Sendable>: Sendable {
    private let state = Mutex<(result: Result<Value, any Error>?, waiter: CheckedContinuation<Value, any Error>?)>((nil, nil))

    func resume(with result: Result<Value, any Error>) {
        let waiter: CheckedContinuation<Value, any Error>? = state.withLock { state in
            guard state.result == nil else { return nil }
            state.result = result
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(with: result)
    }

    func wait() async throws -> Value {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Value, any Error>) in
            let ready: Result<Value, any Error>? = state.withLock { state in
                if let result = state.result { return result }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }
}
