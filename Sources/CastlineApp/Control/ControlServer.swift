import CastlineKit
import Foundation
import Hummingbird
import Synchronization

/// The control API over HTTP for the length of a run (`--control HOST:PORT`):
/// status, live events, stage commands (delay, gain), pause and resume, swap,
/// the running pipeline and metrics (see `ControlRoutes`).
struct ControlServer: Sendable {
    let server: HTTPServer
    let endpoint: Endpoint
    private let metrics: MetricsRecorder
    private let plots: LivePlots

    init(endpoint: Endpoint, token: String?, pipelines: [ControlledPipeline]) {
        let metrics = MetricsRecorder()
        let plots = LivePlots()
        let routes = ControlRoutes(pipelines: pipelines, metrics: metrics, commands: PipelineFiles.registry.commands, plots: plots)
        let router = Router()
        // Outermost: every refusal, a missing route or token included, is the API's JSON error.
        router.add(middleware: ControlErrors(routes: routes))
        router.add(middleware: SameOrigin(loopback: endpoint.isLoopback))
        // The page itself needs no token (it asks for one); everything it calls does.
        ControlPage.add(to: router)
        if let token { router.add(middleware: BearerToken(token: token)) }
        routes.add(to: router)
        server = HTTPServer(router.buildResponder(), endpoint: endpoint, flag: "--control", label: "castline.control")
        self.endpoint = endpoint
        self.metrics = metrics
        self.plots = plots
    }

    /// Feeds `/metrics` and `/plot.svg` (every event passes here).
    func record(_ event: RunEvent) {
        metrics.record(event)
        plots.add(event)
    }
}

/// Each pipeline's plot so far, as `--stats-plot` draws it at the end: `GET /plot.svg`.
final class LivePlots: Sendable {
    private let plots = Mutex<[String: PlotData]>([:])

    func add(_ event: RunEvent) {
        plots.withLock { $0[event.pipeline, default: PlotData()].add(event) }
    }

    func svg(of pipeline: String, last seconds: Double?) -> String {
        let data = plots.withLock { $0[pipeline] } ?? PlotData()
        return StatsPlot.svg(data, title: "castline: \(pipeline)", last: seconds)
    }
}

/// Every request must carry `Authorization: Bearer TOKEN`.
struct BearerToken: RouterMiddleware {
    typealias Context = BasicRequestContext
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.carries(token, request) else {
            // RFC 6750: a token that was sent and is wrong is `invalid_token`; none sent is only a challenge.
            let sent = request.headers[.authorization] != nil
            throw ControlRefusal(
                status: .unauthorized,
                message: sent ? "the control token does not match: send the one this run was started with"
                    : "a control token is required: send Authorization: Bearer TOKEN",
                headers: [.wwwAuthenticate: sent ? "Bearer error=\"invalid_token\"" : "Bearer"])
        }
        return try await next(request, context)
    }

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

/// The API's errors as its JSON: a refusal as it is, the router's 404 naming the
/// routes (or 405 for a known path), anything else as 500.
struct ControlErrors: RouterMiddleware {
    typealias Context = BasicRequestContext
    let routes: ControlRoutes

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let refusal as ControlRefusal {
            return try refusal.response(from: request, context: context)
        } catch let error as HTTPError where error.status == .notFound {
            return try routes.notFound(request).response(from: request, context: context)
        } catch {
            return try ControlRefusal(status: .internalServerError, message: "\(error)").response(from: request, context: context)
        }
    }
}
