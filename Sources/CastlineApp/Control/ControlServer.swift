import CastlineKit
import Foundation
import Hummingbird
import Logging

/// The control API over HTTP for the length of a run (`--control HOST:PORT`):
/// status, live events, delay, pause and resume, swap, the running pipeline
/// and metrics (see `ControlRoutes`). With a token, every request must carry
/// `Authorization: Bearer TOKEN`.
final class ControlServer: Sendable {
    private let task: Task<Void, Never>
    private let metrics: MetricsRecorder

    private init(task: Task<Void, Never>, metrics: MetricsRecorder) {
        self.task = task
        self.metrics = metrics
    }

    /// Returns once the server listens; throws when it cannot (port taken, bad host).
    static func start(host: String, port: Int, token: String?, pipelines: [ControlledPipeline]) async throws -> ControlServer {
        let metrics = MetricsRecorder()
        let routes = ControlRoutes(pipelines: pipelines, metrics: metrics)
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            if let token, !Self.carries(token, request) {
                return ControlReply.error(.unauthorized, "a control token is required: send Authorization: Bearer TOKEN",
                                          headers: [.wwwAuthenticate: "Bearer"])
            }
            return await routes.respond(to: request)
        }
        let task = try await LoopbackHTTP.serve(responder, host: host, port: port, label: "castline.control")
        return ControlServer(task: task, metrics: metrics)
    }

    /// Feeds `/metrics` (every event passes here; only stats samples count).
    func record(_ event: RunEvent) {
        if case .stats(let sample) = event.kind { metrics.record(sample, pipeline: event.pipeline) }
    }

    func stop() { task.cancel() }

    /// True when the request's `Authorization` header is `Bearer <token>`
    /// (compared in time that does not depend on where they differ).
    static func carries(_ token: String, _ request: Request) -> Bool {
        guard let header = request.headers[.authorization], header.lowercased().hasPrefix("bearer ") else { return false }
        let given = Array(header.dropFirst("bearer ".count).trimmingCharacters(in: .whitespaces).utf8)
        let wanted = Array(token.utf8)
        guard given.count == wanted.count else { return false }
        return zip(given, wanted).reduce(UInt8(0)) { $0 | ($1.0 ^ $1.1) } == 0
    }
}
