import CastlineKit
import Foundation
import Hummingbird

/// What the control API answers. Every reply is JSON (errors `{"error": ...}`)
/// except `/events` (server-sent events), `/pipeline` (YAML) and `/metrics`
/// (Prometheus text). `?pipeline=NAME` picks one of several pipelines; without
/// it, reads cover every pipeline and commands go to each.
struct ControlRoutes: Sendable {
    let pipelines: [ControlledPipeline]
    /// Stats figures as Prometheus metrics, fed from every pipeline's events.
    let metrics: MetricsRecorder

    /// Each route and the method it takes.
    static let routes: [String: HTTPRequest.Method] = [
        "/status": .get, "/events": .get, "/pipeline": .get, "/metrics": .get,
        "/delay": .post, "/pause": .post, "/resume": .post, "/swap": .post,
    ]

    /// The largest request body taken (a pipeline file is a few kB).
    static let bodyLimit = 1 << 20

    func respond(to request: Request) async -> Response {
        var path = request.uri.path
        if path.count > 1, path.hasSuffix("/") { path.removeLast() }
        guard let method = Self.routes[path] else {
            let known = Self.routes.sorted { $0.key < $1.key }.map { "\($0.value.rawValue) \($0.key)" }.joined(separator: ", ")
            return ControlReply.error(.notFound, "no route \(request.method.rawValue) \(path) (routes: \(known))")
        }
        guard request.method == method else {
            return ControlReply.error(.methodNotAllowed, "\(path) takes \(method.rawValue), not \(request.method.rawValue)",
                                      headers: [.allow: method.rawValue])
        }
        do {
            let chosen = try selected(request)
            switch path {
            case "/status": return await statusReply(chosen)
            case "/events": return events(chosen)
            case "/pipeline": return await pipelineFile(chosen)
            case "/metrics": return try await metricsText(chosen)
            case "/delay": return try await delay(chosen, body: try await body(of: request))
            case "/pause": return try await pause(chosen)
            case "/resume": return try await resume(chosen)
            case "/swap": return try await ControlSwap(pipelines: pipelines).swap(request, body: try await body(of: request))
            default: return ControlReply.error(.notFound, "no route \(path)")
            }
        } catch let refusal as ControlRefusal {
            return refusal.response
        } catch {
            return ControlReply.error(.internalServerError, "\(error)")
        }
    }

    /// The pipeline `?pipeline=NAME` names, or all of them.
    private func selected(_ request: Request) throws -> [ControlledPipeline] {
        guard let name = request.uri.queryParameters["pipeline"].map(String.init) else { return pipelines }
        guard let pipeline = pipelines.first(where: { $0.name == name }) else {
            throw ControlRefusal(status: .notFound,
                                 message: "no pipeline \"\(name)\" (running: \(pipelines.map(\.name).joined(separator: ", ")))")
        }
        return [pipeline]
    }

    private func body(of request: Request) async throws -> Data {
        var request = request
        do {
            return Data(try await request.collectBody(upTo: Self.bodyLimit).readableBytesView)
        } catch {
            throw ControlRefusal(status: .contentTooLarge, message: "the body is over \(Self.bodyLimit / 1024) kB")
        }
    }

    // MARK: Reads

    /// One pipeline's status as an object; several as `{"pipelines": [...]}`.
    func statusReply(_ chosen: [ControlledPipeline]) async -> Response {
        var objects: [[String: Any]] = []
        for pipeline in chosen { objects.append(await Self.status(of: pipeline)) }
        if objects.count == 1, let only = objects.first { return ControlReply.json(only) }
        return ControlReply.json(["pipelines": objects])
    }

    static func status(of pipeline: ControlledPipeline) async -> [String: Any] {
        let figures = pipeline.hub.figures
        return [
            "pipeline": pipeline.name,
            "state": await pipeline.runner.state.rawValue,
            "position_s": figures.position ?? NSNull(),
            "delay_s": figures.delay ?? NSNull(),
            "available_delay_s": figures.availableDelay ?? NSNull(),
            "stats": figures.samples,
        ]
    }

    /// Server-sent events: each event as `data: <its JSON line>`, live from now on.
    func events(_ chosen: [ControlledPipeline]) -> Response {
        let streams = chosen.map { $0.hub.subscribe() }
        let body = ResponseBody { writer in
            let (chunks, sink) = AsyncStream.makeStream(of: String.self)
            let feeding = Task {
                await withTaskGroup(of: Void.self) { group in
                    for stream in streams {
                        group.addTask { for await event in stream { sink.yield("data: \(EventJSON.line(event))\n\n") } }
                    }
                }
                sink.finish()
            }
            // A comment now and then, so proxies keep an idle stream open and a gone client is noticed.
            let keepingAlive = Task {
                while !Task.isCancelled {
                    try await Task.sleep(for: .seconds(15))
                    sink.yield(": keep-alive\n\n")
                }
            }
            defer {
                feeding.cancel()
                keepingAlive.cancel()
            }
            try await writer.write(ByteBuffer(string: ": castline events\n\n"))
            for await chunk in chunks { try await writer.write(ByteBuffer(string: chunk)) }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: body)
    }

    /// The running pipeline file(s) as YAML, secrets as `****`; several as YAML documents.
    func pipelineFile(_ chosen: [ControlledPipeline]) async -> Response {
        var documents: [String] = []
        for pipeline in chosen {
            let spec = await pipeline.runner.spec
            documents.append(SecretMasker(secrets: spec.allSecrets).mask(spec.yaml(catalog: PipelineFiles.registry)))
        }
        let text = documents.count == 1 ? documents.joined() : documents.map { "---\n" + $0 }.joined()
        return ControlReply.text(text, contentType: "application/yaml; charset=utf-8")
    }

    func metricsText(_ chosen: [ControlledPipeline]) async throws -> Response {
        var statsOn = false
        for pipeline in chosen where await pipeline.hasStage("stats") { statsOn = true }
        guard statsOn else {
            throw ControlRefusal(status: .notFound, message: """
                no stats: add a stats stage to the pipeline (- stats: {}), or give broadcast/listen \
                --metrics, --stats-json or --stats-plot
                """)
        }
        return ControlReply.text(metrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }

    // MARK: Commands

    /// `{"seconds": 12}` sets the delay, `{"step": 1}` moves it by steps; the reply
    /// is the status once the delay stage has said what it applied.
    func delay(_ chosen: [ControlledPipeline], body: Data) async throws -> Response {
        let change = try DelayChange(json: body)
        for pipeline in chosen where !(await pipeline.hasStage("delay")) {
            throw ControlRefusal(status: .conflict, message: """
                pipeline \"\(pipeline.name)\" has no delay stage (add - delay: { max: 10m } to its stages, or listen --delay)
                """)
        }
        let moved = chosen.map { $0.hub.subscribe() }
        for pipeline in chosen {
            switch change {
            case .seconds(let seconds): await pipeline.runner.setDelay(.milliseconds(Int64((seconds * 1000).rounded())))
            case .step(let steps): await pipeline.runner.stepDelay(steps)
            }
        }
        for stream in moved {
            _ = await Self.firstEvent(in: stream, within: .seconds(3)) {
                if case .delayChanged = $0.kind { true } else { false }
            }
        }
        return await statusReply(chosen)
    }

    func pause(_ chosen: [ControlledPipeline]) async throws -> Response {
        try await change(chosen, to: .paused, otherwise: "only a playing pipeline pauses") { await $0.pause() }
    }

    func resume(_ chosen: [ControlledPipeline]) async throws -> Response {
        try await change(chosen, to: .playing, otherwise: "only a paused pipeline resumes") { await $0.resume() }
    }

    /// Asks each pipeline's runner for a change of state; 409 for one that did not get there.
    private func change(
        _ chosen: [ControlledPipeline], to wanted: RunState, otherwise rule: String,
        _ ask: (PipelineRunner) async -> Void
    ) async throws -> Response {
        for pipeline in chosen {
            await ask(pipeline.runner)
            let state = await pipeline.runner.state
            guard state == wanted else {
                throw ControlRefusal(status: .conflict, message: "pipeline \"\(pipeline.name)\" is \(state): \(rule)")
            }
        }
        return await statusReply(chosen)
    }

    /// The first event in `stream` that `matches`, or nil after `timeout` (or at the end of the run).
    static func firstEvent(in stream: AsyncStream<RunEvent>, within timeout: Duration,
                           where matches: @escaping @Sendable (RunEvent) -> Bool) async -> RunEvent? {
        await withTaskGroup(of: RunEvent?.self) { group in
            group.addTask {
                for await event in stream where matches(event) { return event }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}

/// The body of `POST /delay`.
enum DelayChange: Equatable {
    case seconds(Double)
    case step(Int)

    /// More than any history a delay stage could hold (30 days, in seconds or steps).
    static let longest: Double = 30 * 86_400

    init(json: Data) throws {
        let usage = #"(send {"seconds": 12} or {"step": 1})"#
        guard let object = (try? JSONSerialization.jsonObject(with: json)) as? [String: Any] else {
            throw ControlRefusal(status: .badRequest, message: "the body is not a JSON object \(usage)")
        }
        if let unknown = object.keys.sorted().first(where: { $0 != "seconds" && $0 != "step" }) {
            throw ControlRefusal(status: .badRequest, message: "unknown field \"\(unknown)\" \(usage)")
        }
        switch (object["seconds"], object["step"]) {
        case (let seconds?, nil):
            guard let value = seconds as? Double, value.isFinite, (0...Self.longest).contains(value) else {
                throw ControlRefusal(status: .badRequest, message: "seconds: a number from 0 to \(Int(Self.longest)) \(usage)")
            }
            self = .seconds(value)
        case (nil, let step?):
            guard let value = step as? Int, value.magnitude <= UInt(Self.longest) else {
                throw ControlRefusal(status: .badRequest, message: "step: a whole number, e.g. 1 or -1 \(usage)")
            }
            self = .step(value)
        default:
            throw ControlRefusal(status: .badRequest, message: "give one of seconds or step \(usage)")
        }
    }
}
