import Foundation
import GstKit
import PipelineConfig

/// Drives one pipeline: builds it, plays it, and stops it cleanly (end-of-stream first, so
/// files are whole). Its state is one `RunModel`, moved only by `RunModel.reduce`; this actor
/// names bus messages after the file's parts, feeds them and its own requests in, and carries
/// out the effects. It runs on a thread of its own (`PipelineThread`), where every GStreamer
/// state change of the run is made.
public actor PipelineRunner {
    public typealias Outcome = RunModel.Outcome

    public nonisolated let name: String
    /// Where the plan's components report; a swap's plan is made into it.
    public nonisolated let channel: RunChannel
    public nonisolated var events: AsyncStream<RunEvent> { channel.events }
    private nonisolated let thread: PipelineThread
    public nonisolated var unownedExecutor: UnownedSerialExecutor { thread.asUnownedSerialExecutor() }

    private var model: RunModel
    public var state: RunState { model.state }

    /// The pipeline file running now; a swap replaces it.
    public private(set) var spec: PipelineSpec
    private let emitter: EventEmitter
    private let masker: SecretMasker
    private let planned: PipelinePlan
    private var built: BuiltPipeline?
    /// Every task the runner starts (bus, connection changes, timers): cancelled when it finishes.
    private var tasks: [Task<Void, Never>] = []
    /// The source fetching what it needs to start (a playlist, its first segment).
    private var preparing: Task<(PipelinePlan, leftOut: [RunModel.LostSink]), any Error>?
    private var waiters: [CheckedContinuation<Outcome, Never>] = []
    /// Swaps so far: new parts are named after it.
    private var generation = 0
    /// How much media the sinks take before the run ends by itself (see `limit(to:)`).
    private var mediaLimit: Duration?

    /// How long GStreamer's bus gets to say why the pipeline would not play.
    static let refusalWait = Duration.milliseconds(500)

    /// Runs a plan (made once, by `ComponentRegistry.plan`).
    public init(plan: PipelinePlan, drainTimeout: Duration = .seconds(10)) {
        planned = plan
        spec = plan.spec
        channel = plan.channel
        model = RunModel(drainTimeout: drainTimeout)
        name = plan.spec.name
        masker = plan.channel.masker
        emitter = plan.channel.emitter
        thread = PipelineThread(name: plan.spec.name)
    }

    /// Plans `spec` and runs it.
    public init(spec: PipelineSpec, registry: ComponentRegistry, drainTimeout: Duration = .seconds(10)) throws {
        self.init(plan: try registry.plan(spec), drainTimeout: drainTimeout)
    }

    /// Builds the graph, checks what its sinks connect to, and sets it playing.
    /// Throws when it cannot be built or started.
    public func start() async throws {
        guard model.phase == .idle else { return }
        send(.start)
        let changes = channel.connectionChanges
        tasks.append(Task { [weak self] in
            for await (keyPath, change) in changes { await self?.connectionChanged(change, from: keyPath) }
        })
        let built: BuiltPipeline
        let leftOut: [RunModel.LostSink]
        do {
            // A task of its own, so a stop while it waits on the network (a playlist, a sink's far end) cancels it.
            let preparing = Task { [planned] in
                try await planned.prepareSource()
                return try await planned.preflighted()
            }
            self.preparing = preparing
            defer { self.preparing = nil }
            let (plan, left) = try await preparing.value
            // Stopped while preparing (waiting for a stream to go live): nothing to start.
            guard model.phase == .starting else { return }
            built = try GraphBuilder().build(plan)
            leftOut = left
        } catch {
            guard model.phase == .starting else { return }  // stopped while preparing
            // The caller reports a build error with the file's name; no failure event to print twice.
            let text = masker.mask("\(error)")
            send(.buildFailed(text))
            throw BuildError(text, badInput: (error as? BuildError)?.isBadInput ?? false)
        }
        self.built = built
        if let mediaLimit { built.limit.set(mediaLimit) }
        send(.built(Self.layout(of: built.plan), leftOut: leftOut))
        let bus = built.pipeline.bus
        tasks.append(Task { [weak self] in
            for await message in bus.messages() {
                guard let self, await self.take(message) else { return }
            }
        })
        let result = built.pipeline.setState(.playing)
        send(.playRequested(result))
        if result == .failure, case .failed(let reason) = await wait() {
            throw BuildError(reason)
        }
    }

    /// Ends the run cleanly: end-of-stream into every source, then wait for it
    /// to reach the sinks (at most the drain timeout) before tearing down.
    public func stop() { send(.stop) }

    /// Ends the run cleanly once every sink has taken `duration` of media (asked before the
    /// start, from the start).
    public func limit(to duration: Duration) {
        mediaLimit = duration
        built?.limit.set(duration)
    }

    /// Tears down at once, without draining.
    public func abort() { send(.abort) }

    /// Pauses play: with a time-shifting stage (a time-shift) only its play-out holds, so a live
    /// stream is still taken in; else the whole pipeline pauses.
    public func pause() { send(.pause) }

    /// castline's picture of what runs now (Graphviz dot, secrets masked); nil until it is built.
    public func picture() -> String? { built.map { masker.mask(PipelinePicture.dot($0)) } }

    /// Returns what the stages that held their play-out now play at (a time-shift grown by the pause).
    @discardableResult
    public func resume() -> [StageEvent] { send(.resume) }

    /// The running stages that take `command`.
    private func stages(taking command: String) -> [any ControllableStage] {
        (built?.plan ?? planned).stages.compactMap { part in
            guard let stage = part.component as? any ControllableStage,
                  type(of: stage).commands.contains(where: { $0.name == command }) else { return nil }
            return stage
        }
    }

    /// Hands a command to every running stage that takes it; returns what each applied (nothing
    /// when no stage takes it, or none has it in force yet).
    @discardableResult
    public func perform(_ command: String, _ adjustment: StageAdjustment) -> [StageEvent] {
        stages(taking: command).compactMap { $0.perform(command, adjustment) }
    }

    /// A key a running stage's command takes (`+` for the delay): performed. nil when
    /// no running stage takes it, else the command's name.
    public func perform(key: Character) -> String? {
        for part in (built?.plan ?? planned).stages {
            guard let stage = part.component as? any ControllableStage else { continue }
            for command in type(of: stage).commands {
                if let steps = command.keys[key] {
                    perform(command.name, .step(steps))
                    return command.name
                }
            }
        }
        return nil
    }

    /// Applies `newSpec` to the running pipeline, rebuilding only what changed
    /// (see `GraphSwap`); reports `reloaded` on success. Its components are made
    /// here, once, into this run's channel. When it cannot be applied the running
    /// pipeline is left as it was, `reload-failed` is reported, and the errors are
    /// thrown. `origin` names where the spec came from, for messages.
    public func swap(to newSpec: PipelineSpec, registry: ComponentRegistry, origin: String) async throws(SwapRefused) -> SwapReport {
        let plan: PipelinePlan
        do {
            plan = try registry.plan(newSpec, channel: channel)
        } catch {
            let line = masker.mask(newSpec.errorLine(error, origin: origin))
            refuseReload(origin: origin, errors: [line])
            throw SwapRefused(lines: [line])
        }
        return try await swap(to: plan, origin: origin)
    }

    private func swap(to plan: PipelinePlan, origin: String) async throws(SwapRefused) -> SwapReport {
        let newSpec = plan.spec
        let started = ContinuousClock.now
        func refuse(_ lines: [String]) -> SwapRefused {
            let lines = lines.map(masker.mask)
            refuseReload(origin: origin, errors: lines)
            return SwapRefused(lines: lines)
        }
        switch model.phase {
        case .running: break
        case .idle, .starting: throw refuse(["\(origin): the pipeline is still starting; save the file again once it plays"])
        case .swapping: throw refuse(["\(origin): another swap is under way; try again when it is done"])
        case .stopping, .refused, .finishing, .finished: throw refuse(["\(origin): the pipeline has stopped"])
        }
        guard let built else { throw refuse(["\(origin): the pipeline is still starting; save the file again once it plays"]) }
        let diff = SpecDiff(old: spec, new: newSpec) { index in
            Self.adjustable(at: index, built.plan, to: plan).map { $0.running.canAdjust(to: $0.replacement) } ?? false
        }
        guard !diff.isEmpty else {
            let report = SwapReport(changes: [], took: ContinuousClock.now - started)
            emitter.emit(.reloaded(changes: ["nothing changed"], took: report.took))
            return report
        }
        if diff.rebuildsNothing {
            // Nothing is rebuilt: the running stages take their new options.
            adjust(built.plan, to: plan, diff.adjustedChain)
            self.built = built.with(plan: GraphSwap.merge(built.plan, plan, keptChain: diff.keptChain, keptSinks: diff.keptSinks))
            spec = newSpec
            let report = SwapReport(changes: diff.changes, took: ContinuousClock.now - started)
            emitter.emit(.reloaded(changes: report.changes, took: report.took))
            return report
        }
        send(.swapBegan)
        generation += 1
        let swap: GraphSwap
        do {
            swap = try await GraphSwap.prepare(built, to: plan, diff: diff, builder: GraphBuilder(generation: generation))
        } catch {
            send(.swapEnded(Self.layout(of: built.plan)))
            throw refuse(["\(origin): \(error)"])
        }
        // The run failed while the new parts were made, or as they went in: it finished the parts
        // it had then, not the new source.
        func wentDown(applied: Bool) async -> SwapRefused {
            await swap.discard(applied: applied)
            return refuse(["\(origin): the pipeline has stopped"])
        }
        guard case .swapping = model.phase else { throw await wentDown(applied: false) }
        send(.swapApplying(retiring: swap.retiredNames))
        let applied = await swap.apply(started: started)
        guard case .swapping = model.phase else { throw await wentDown(applied: true) }
        adjust(built.plan, to: plan, diff.adjustedChain)
        self.built = applied.built
        // The destinations the run has now (`ComponentContext.destinations`).
        channel.destinations.store(applied.built.plan.sinks.filter(\.component.isDestination).count, ordering: .relaxed)
        spec = newSpec
        for note in applied.notes { emitter.emit(.notice(note)) }
        emitter.emit(.reloaded(changes: swap.changes, took: applied.took))
        send(.swapEnded(Self.layout(of: applied.built.plan)))
        return SwapReport(changes: swap.changes, took: applied.took)
    }

    /// The running chain parts at `chain` take the options of `plan`'s.
    private func adjust(_ running: PipelinePlan, to plan: PipelinePlan, _ chain: [Int]) {
        for index in chain {
            guard let pair = Self.adjustable(at: index, running, to: plan) else { continue }
            pair.running.adjust(to: pair.replacement)
        }
    }

    /// The running stage at chain index `index` (stages: index - 1), when it can adjust, and the one `plan` made there.
    private static func adjustable(at index: Int, _ running: PipelinePlan, to plan: PipelinePlan)
        -> (running: any AdjustableStage, replacement: any Stage)? {
        guard index > 0, let stage = running.stages[safe: index - 1]?.component as? any AdjustableStage,
              let replacement = plan.stages[safe: index - 1]?.component else { return nil }
        return (stage, replacement)
    }

    /// Reports a pipeline file that was not applied (it did not load or validate).
    public func refuseReload(origin: String, errors: [String]) {
        emitter.emit(.reloadFailed(origin: origin, errors: errors))
    }

    /// Waits until the run is over.
    public func wait() async -> Outcome {
        if case .finished(let outcome) = model.phase { return outcome }
        return await withCheckedContinuation { waiters.append($0) }
    }

    /// Names a bus message after the file's parts and feeds it in; false once the run is over.
    private func take(_ message: BusMessage) -> Bool {
        guard let built, model.outcome == nil else { return false }
        switch message {
        case .error(let source, let text, let debug, let cause):
            send(.error(source: source, owner: masker.mask(owner(of: source)), text: masker.mask(text),
                        hint: debug.flatMap(Self.hint(fromDebug:)).map(masker.mask), cause: cause))
        case .warning(let source, let text, _):
            send(.warning(source: source, owner: masker.mask(owner(of: source)), text: masker.mask(text)))
        case .element(_, let structure) where structure.name == "missing-plugin":
            if let line = Self.missingDecoder(in: structure) { send(.missingDecoder(line)) }
        case .latency:
            send(.latency)
        case .endOfStream:
            send(.endOfStream)
        case .stateChanged(let source, _, .playing, _) where source == built.pipeline.name:
            // Whether it has an end is asked once, as it first plays.
            var hasKnownEnd = false
            if case .notYetPlayed = model.media { hasKnownEnd = built.pipeline.queryDuration() != nil }
            send(.pipelinePlaying(hasKnownEnd: hasKnownEnd))
        case .buffering(_, let percent):
            send(.buffering(percent: percent))
        default:
            break
        }
        return model.outcome == nil
    }

    /// The key path of the component whose bin holds the element named `source`.
    private func owner(of source: String) -> String {
        guard let built else { return source }
        var element = built.pipeline.element(named: source)
        while let current = element {
            if let keyPath = built.owners[current.name] { return "\(keyPath) (\(source))" }
            element = current.parent
        }
        return source
    }

    private static func layout(of plan: PipelinePlan) -> RunModel.Layout {
        var layout = RunModel.Layout(
            sinks: plan.sinks.map(\.spec.keyPath),
            destinations: plan.sinks.filter(\.component.isDestination).map(\.spec.keyPath),
            holdsPlayout: plan.stages.contains { $0.component is any TimeShiftingStage },
            playsOutOnItsOwnClock: plan.stages.contains { $0.component.playsOutOnItsOwnClock })
        for sink in plan.sinks { layout.destinationNames[sink.spec.keyPath] = sink.component.destinationName }
        return layout
    }

    private func connectionChanged(_ change: ConnectionChange, from keyPath: String) {
        // Past --duration on an input, what runs dry upstream is a stream no longer taken
        // (dropped as fast as it comes, it reaches the live edge): not a stall.
        if change == .stalled, built?.limit.isReached == true { return }
        send(.connection(keyPath: keyPath, change))
    }

    /// Moves the model, and carries out what the move asks for; returns what stages said they
    /// applied on the way (a held play-out let go).
    @discardableResult
    private func send(_ input: RunInput) -> [StageEvent] {
        let (next, effects) = RunModel.reduce(model, input)
        model = next
        return effects.flatMap(carryOut)
    }

    private func carryOut(_ effect: RunEffect) -> [StageEvent] {
        switch effect {
        case .announce(let from, let to): emitter.emit(.stateChanged(from: from, to: to))
        case .notice(let line): emitter.emit(.notice(line))
        case .warning(let line): emitter.emit(.warning(line))
        case .failure(let line): emitter.emit(.failure(line))
        case .buffering(let percent): emitter.emit(.buffering(percent: percent))
        case .endOfStream: emitter.emit(.endOfStream)
        case .setPipelineState(let state): built?.pipeline.setState(state)
        case .holdPlayout(let held):
            let shifting = (built?.plan ?? planned).stages.compactMap { $0.component as? any TimeShiftingStage }
            guard !held else {
                for stage in shifting { stage.pausePlayout() }
                return []
            }
            return shifting.compactMap { $0.resumePlayout() }
        case .recalculateLatency: built?.pipeline.recalculateLatency()
        case .cutPlayout:
            for sink in built?.layout.sinks ?? [] { sink.playout?.cut() }
        case .stopSource(let sendEndOfStream):
            let source = (built?.plan ?? planned).source.component
            source.willStop()
            if sendEndOfStream, !source.endsStreamsOnStop { built?.pipeline.sendEvent(.endOfStream()) }
        case .cancelPreparation: preparing?.cancel()
        case .startTimer(let timer):
            let wait = timer == .drain ? model.drainTimeout : Self.refusalWait
            tasks.append(Task { [weak self] in
                guard (try? await Task.sleep(for: wait)) != nil else { return }
                await self?.send(.timerFired(timer))
            })
        case .finishSinks(let completed):
            built?.pipeline.setState(.null)
            for task in tasks { task.cancel() }
            // Sinks built before a stop that came while the graph was starting are finished too.
            let sinks = (built?.plan ?? planned).sinks
            let source = (built?.plan ?? planned).source.component
            // A sink's finish may wait (an RTMP publish drains up to 5 s): awaited, not blocking the driver.
            Task {
                await source.finish()
                // All at once: one destination's drain (up to 5 s into a dead path) is not another's
                // time published, nor the user's wait.
                let verdicts = await withTaskGroup(of: (Int, SinkVerdict).self) { group in
                    for (index, component) in sinks.map(\.component).enumerated() {
                        group.addTask { (index, await component.finish(completed: completed)) }
                    }
                    return await group.reduce(into: [Int: SinkVerdict]()) { $0[$1.0] = $1.1 }
                }
                send(.sinksFinished(sinks.indices.map { .init(keyPath: sinks[$0].spec.keyPath, verdict: verdicts[$0] ?? .quiet) }))
            }
        case .close(let outcome):
            channel.finish()
            for waiter in waiters { waiter.resume(returning: outcome) }
            waiters.removeAll()
        }
        return []
    }
}
