import CastlineKit
import Foundation
import Hummingbird

/// What the control API answers, on Hummingbird's Router. Replies are JSON
/// (errors `{"error": ...}`) except `/events` (server-sent events), `/pipeline`
/// (YAML) and `/metrics` (Prometheus text). `?pipeline=NAME` picks one of
/// several pipelines; without it, reads cover every pipeline and commands go to
/// each. `POST /NAME` is any running stage's command (`/delay`, `/gain`).
struct ControlRoutes: Sendable {
    let pipelines: [ControlledPipeline]
    /// Stats figures as Prometheus metrics, fed from every pipeline's events.
    let metrics: MetricsRecorder
    let commands: [StageCommand]
    let plots: LivePlots

    /// The largest request body taken (a pipeline file is a few kB).
    static let bodyLimit = 1 << 20

    /// Each fixed route and its method; the stage commands come on top (`POST /NAME`).
    static let fixed: [(path: String, method: HTTPRequest.Method)] = [
        ("/", .get), ("/status", .get), ("/events", .get), ("/pipeline", .get), ("/metrics", .get), ("/commands", .get), ("/plot.svg", .get), ("/graph.svg", .get), ("/alarms", .get),
        ("/pause", .post), ("/resume", .post), ("/swap", .post),
    ]

    var routes: [(path: String, method: HTTPRequest.Method)] {
        Self.fixed + commands.map { ("/\($0.name)", .post) }
    }

    func add(to router: Router<BasicRequestContext>) {
        router.get("status") { request, _ in try await status(selected(request)) }
        router.get("events") { request, _ in try events(selected(request)) }
        router.get("pipeline") { request, _ in try await pipelineFile(selected(request)) }
        router.get("metrics") { request, _ in try await metricsText(selected(request)) }
        router.get("commands") { request, _ in try await commandList(selected(request)) }
        router.get("alarms") { request, _ in try alarmList(selected(request)) }
        router.get("plot.svg") { request, _ in try plot(request) }
        router.get("graph.svg") { request, _ in try await graph(request) }
        router.post("pause") { request, _ in
            try await change(selected(request), to: .paused, otherwise: "only a playing pipeline pauses") {
                await $0.pause()
                return []
            }
        }
        router.post("resume") { request, _ in
            try await change(selected(request), to: .playing, otherwise: "only a paused pipeline resumes") { await $0.resume() }
        }
        router.post("swap") { request, _ in
            try await ControlSwap(pipelines: pipelines).swap(request, body: try await body(of: request))
        }
        router.post(":command") { request, context in
            let name = context.parameters.get("command") ?? ""
            guard let command = commands.first(where: { $0.name == name }) else { throw notFound(request) }
            let named = request.uri.queryParameters["pipeline"] != nil
            return try await perform(command, on: selected(request), named: named, body: try await body(of: request))
        }
    }

    /// 404 naming the routes there are, or 405 when the path takes another method.
    func notFound(_ request: Request) -> ControlRefusal {
        var path = request.uri.path
        if path.count > 1, path.hasSuffix("/") { path.removeLast() }
        if let route = routes.first(where: { $0.path == path }) {
            return ControlRefusal(status: .methodNotAllowed, message: "\(path) takes \(route.method.rawValue), not \(request.method.rawValue)",
                                  headers: [.allow: route.method.rawValue])
        }
        let known = routes.sorted { $0.path < $1.path }
            .map { "\($0.method.rawValue) \($0.path)\($0.path == "/" ? " (the page)" : "")" }.joined(separator: ", ")
        return ControlRefusal(status: .notFound, message: "no route \(request.method.rawValue) \(path) (routes: \(known))")
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

    /// One pipeline's status as an object; several as `{"pipelines": [...]}`. `answers`: what
    /// stages just said they applied, newer than the figures the hub has seen so far.
    func status(_ chosen: [ControlledPipeline], answers: [String: [StageEvent]] = [:]) async -> Response {
        var replies: [PipelineStatus] = []
        for pipeline in chosen { replies.append(await status(of: pipeline, answers: answers[pipeline.name] ?? [])) }
        if replies.count == 1, let only = replies.first { return ControlReply.json(only) }
        return ControlReply.json(PipelinesStatus(pipelines: replies))
    }

    private func status(of pipeline: ControlledPipeline, answers: [StageEvent]) async -> PipelineStatus {
        let figures = pipeline.hub.figures
        let answered = answers.reduce(into: [String: Double]()) { $0.merge($1.figures) { _, new in new } }
        var commandFigures: [String: Double?] = [:]
        for command in commands where await pipeline.hasStage(taking: command.name) {
            for figure in command.figures {
                let latest: Double? = answered[figure] ?? figures.commandFigures[figure]
                commandFigures[figure] = .some(latest)
            }
        }
        return PipelineStatus(pipeline: pipeline.name, state: await pipeline.runner.state, position: figures.position,
                              commandFigures: commandFigures, stats: figures.entries)
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
        for pipeline in chosen where await pipeline.measuresStreams() { statsOn = true }
        guard statsOn else {
            throw ControlRefusal(status: .notFound, message: """
                no stats: add a stats stage to the pipeline (- stats: {}), or give broadcast/listen \
                --metrics, --stats-json or --stats-plot
                """)
        }
        return ControlReply.text(metrics.exposition(), contentType: "text/plain; version=0.0.4; charset=utf-8")
    }

    /// The alarms raised now on the chosen pipelines, each with its pipeline, and how many were raised in all.
    func alarmList(_ chosen: [ControlledPipeline]) -> Response {
        struct Reply: Encodable {
            let alarms: [AlarmBook.Alarm]
            let raisedTotal: Int
            enum CodingKeys: String, CodingKey { case alarms, raisedTotal = "raised_total" }
        }
        let books = chosen.map { ($0.name, $0.hub.figures.alarms) }
        return ControlReply.json(Reply(alarms: books.flatMap { name, book in book.active.map { $0.of(pipeline: name) } },
                                       raisedTotal: books.reduce(0) { $0 + $1.1.raisedTotal }))
    }

    /// The stage commands the chosen pipelines take, as the page draws their controls.
    func commandList(_ chosen: [ControlledPipeline]) async -> Response {
        var list: [CommandDeclaration] = []
        for command in commands {
            var takers: [String] = []
            for pipeline in chosen where await pipeline.hasStage(taking: command.name) { takers.append(pipeline.name) }
            if !takers.isEmpty { list.append(CommandDeclaration(command, pipelines: takers)) }
        }
        return ControlReply.json(["commands": list])
    }

    /// One pipeline's plot (`?pipeline=` needed with several), `?last=SECONDS` for the latest part.
    func plot(_ request: Request) throws -> Response {
        let pipeline = try one(request)
        let last = request.uri.queryParameters["last"].flatMap { Double(String($0)) }.flatMap { $0 > 0 ? $0 : nil }
        return ControlReply.text(plots.svg(of: pipeline.name, last: last), contentType: "image/svg+xml")
    }

    /// `castline graph`'s picture of what one pipeline runs now.
    func graph(_ request: Request) async throws -> Response {
        guard let dot = try await one(request).runner.picture() else {
            throw ControlRefusal(status: .conflict, message: "the pipeline is still starting: ask again once it plays")
        }
        do {
            return ControlReply.text(try await GraphExport.svg(dot), contentType: "image/svg+xml")
        } catch {
            throw ControlRefusal(status: .serviceUnavailable, message: "\(error)")
        }
    }

    /// The one pipeline a request names, or the only one there is.
    private func one(_ request: Request) throws -> ControlledPipeline {
        let chosen = try selected(request)
        guard chosen.count == 1, let pipeline = chosen.first else {
            throw ControlRefusal(status: .badRequest, message: "name one pipeline: \(request.uri.path)?pipeline=NAME")
        }
        return pipeline
    }

    // MARK: Commands

    /// `{"<value field>": 12}` sets, `{"step": 1}` moves by steps; the reply is the
    /// status once each stage has said what it applied. Unless a pipeline is `named`, it goes
    /// to every pipeline that can take it.
    func perform(_ command: StageCommand, on candidates: [ControlledPipeline], named: Bool, body: Data) async throws -> Response {
        let adjustment = try Self.adjustment(command, json: body)
        var chosen: [ControlledPipeline] = []
        for pipeline in candidates where await pipeline.hasStage(taking: command.name) { chosen.append(pipeline) }
        guard !chosen.isEmpty, !named || chosen.count == candidates.count else {
            let which = candidates.count == 1 ? "pipeline \"\(candidates[0].name)\" has no stage" : "no running pipeline has a stage"
            throw ControlRefusal(status: .conflict, message: "\(which) that takes \(command.name) (\(command.missingHint))")
        }
        // Watched from before the command, so the first sample after it is not missed.
        let watched = command.movesPlayback ? chosen.map { ($0.hub.subscribe(), $0.hub) } : []
        let asked = Date()
        var answers: [String: [StageEvent]] = [:]
        for pipeline in chosen { answers[pipeline.name] = await pipeline.runner.perform(command.name, adjustment) }
        if answers.values.contains(where: { !$0.isEmpty }) {
            await Self.positionSampled(in: watched, after: asked.addingTimeInterval(Self.moveSettles), within: .seconds(2))
        }
        return await status(chosen, answers: answers)
    }

    /// What plays reaches the stats stage this long after a move (a delay stage sends it 200 ms ahead).
    static let moveSettles: TimeInterval = 0.3

    /// Waits until each pipeline's position (`LatestFigures.position`) is read from samples taken
    /// after `time` (or `within` has passed): the position a reply gives is then where the move took play.
    static func positionSampled(in pipelines: [(events: AsyncStream<RunEvent>, hub: EventHub)], after time: Date,
                                within: Duration) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for (events, hub) in pipelines {
                    for await _ in events where hub.figures.positionSampled(after: time) { break }
                }
            }
            group.addTask { try? await Task.sleep(for: within) }
            await group.next()
            group.cancelAll()
        }
    }

    /// The body of a command: `{"<value field>": number}` or `{"step": whole number}`.
    static func adjustment(_ command: StageCommand, json: Data) throws -> StageAdjustment {
        do {
            return try StageAdjustment(json: json, valueField: command.valueField, range: command.range)
        } catch {
            throw ControlRefusal(status: .badRequest, message: error.description)
        }
    }

    /// Asks each pipeline's runner for a change of state; 409 for one that did not get there.
    private func change(
        _ chosen: [ControlledPipeline], to wanted: RunState, otherwise rule: String,
        _ ask: (PipelineRunner) async -> [StageEvent]
    ) async throws -> Response {
        var answers: [String: [StageEvent]] = [:]
        for pipeline in chosen {
            answers[pipeline.name] = await ask(pipeline.runner)
            let state = await pipeline.runner.state
            guard state == wanted else {
                throw ControlRefusal(status: .conflict, message: "pipeline \"\(pipeline.name)\" is \(state): \(rule)")
            }
        }
        return await status(chosen, answers: answers)
    }
}
