import HLS
import Foundation
import GstKit
import PipelineConfig

/// Runs one pipeline: builds it, plays it, turns bus messages into events and
/// state changes, and stops it cleanly (end-of-stream first, so files are whole).
/// (Over 400 lines, and left so: #30 replaces it with one driver on an executor of its own and
/// a pure reducer of bus messages; splitting the actor's state across files now would only
/// move code that is about to go. The words for bus messages are in `BusMessageText`.)
public actor PipelineRunner {
    public enum Outcome: Sendable, Equatable {
        /// Every stream reached its end.
        case completed
        /// Stopped on request after draining.
        case stopped
        case failed(String)
    }

    public nonisolated let name: String
    /// Where the plan's components report; a swap's plan is made into it.
    public nonisolated let channel: RunChannel
    public nonisolated var events: AsyncStream<RunEvent> { channel.events }
    public private(set) var state: RunState = .initialising

    /// The pipeline file running now; a swap replaces it.
    public private(set) var spec: PipelineSpec
    private let emitter: EventEmitter
    private let masker: SecretMasker
    private let drainTimeout: Duration
    private let planned: PipelinePlan
    private var started = false
    private var built: BuiltPipeline?
    /// Every task the runner starts (bus, connection changes, drain timer): cancelled when it finishes.
    private var tasks: [Task<Void, Never>] = []
    /// Finishing the sinks, once the outcome is known; `finished` once they are done and the events end.
    private var finishing: Task<Void, Never>?
    /// The source fetching what it needs to start (a playlist, its first segment).
    private var preparing: Task<Void, any Error>?
    private var finished = false
    private var outcome: Outcome?
    /// Sinks that failed while others went on (see `sinkFailed`).
    private var lostSinks: [(keyPath: String, reason: String)] = []
    private var waiters: [CheckedContinuation<Outcome, Never>] = []
    private var stopRequested = false
    private var isLive = false
    private var hasPlayed = false
    /// The media has a duration (a file, a VOD playlist), read when it first plays.
    private var hasKnownEnd = true
    /// The decoder decodebin said is missing: the error that follows is told in these words.
    private var missingDecoder: String?
    /// A swap is under way; a stop asked for meanwhile waits for it.
    private var swapping = false
    private var stopAfterSwap = false
    /// Swaps so far: new parts are named after it.
    private var generation = 0
    /// Elements swapped out: what they say while going away is not about the run.
    private var retiredNames: Set<String> = []

    /// Runs a plan (made once, by `ComponentRegistry.plan`).
    public init(plan: PipelinePlan, drainTimeout: Duration = .seconds(10)) {
        planned = plan
        spec = plan.spec
        channel = plan.channel
        self.drainTimeout = drainTimeout
        name = plan.spec.name
        masker = plan.channel.masker
        emitter = plan.channel.emitter
    }

    /// Plans `spec` and runs it.
    public init(spec: PipelineSpec, registry: ComponentRegistry, drainTimeout: Duration = .seconds(10)) throws {
        self.init(plan: try registry.plan(spec), drainTimeout: drainTimeout)
    }

    /// Builds the graph, checks what its sinks connect to, and sets it playing.
    /// Throws when it cannot be built or started.
    public func start() async throws {
        guard !started, outcome == nil else { return }
        started = true
        let changes = channel.connectionChanges
        tasks.append(Task { [weak self] in
            for await (keyPath, change) in changes { await self?.connectionChanged(change, from: keyPath) }
        })
        let built: BuiltPipeline
        do {
            transition(to: .connecting)
            // A task of its own, so a stop while it waits on the network cancels it.
            let preparing = Task { [planned] in try await planned.prepareSource() }
            self.preparing = preparing
            defer { self.preparing = nil }
            try await preparing.value
            // Stopped while preparing (waiting for a stream to go live): nothing to start.
            guard outcome == nil else { return }
            built = try GraphBuilder().build(planned)
            for part in built.plan.sinks {
                try await located(part.spec.keyPath) { try await part.component.preflight() }
            }
            // Stopped while a sink checked its far end: the run is over, and this graph never plays
            // (left to start, it would play on past the end of the run).
            guard outcome == nil else { return }
        } catch {
            if outcome != nil { return }  // stopped while preparing
            // The caller reports a build error with the file's name; no failure event to print twice.
            finish(.failed(masker.mask("\(error)")), announce: false)
            throw BuildError(masker.mask("\(error)"), badInput: (error as? BuildError)?.isBadInput ?? false)
        }
        self.built = built
        let bus = built.pipeline.bus
        tasks.append(Task { [weak self] in
            for await message in bus.messages() {
                guard let self else { return }
                await self.handle(message)
                if await self.outcome != nil { return }
            }
        })
        transition(to: .connecting)
        switch built.pipeline.setState(.playing) {
        case .failure:
            // The bus carries the reason; give it a moment to arrive before a generic one.
            let reason = bus.pop(timeout: .milliseconds(500)).flatMap(failureText) ?? "the pipeline could not start"
            finish(.failed(reason), announce: false)
            throw BuildError(reason)
        case .noPreroll:
            isLive = true
        case .success, .async:
            break
        }
    }

    /// Ends the run cleanly: end-of-stream into every source, then wait for it
    /// to reach the sinks (at most the drain timeout) before tearing down.
    public func stop() {
        guard outcome == nil, let built else {
            preparing?.cancel()
            planned.source.component.willStop()
            if outcome == nil { finish(.stopped) }
            return
        }
        guard !stopRequested else { return }
        guard !swapping else {
            stopAfterSwap = true
            return
        }
        stopRequested = true
        // Paused (by the user, or to buffer), the sinks would never render the end.
        if state == .paused { resume() }
        if [.buffering, .reconnecting].contains(state) { built.pipeline.setState(.playing) }
        transition(to: .stopping)
        emitter.emit(.notice("stopping: sending end-of-stream so outputs are complete"))
        built.plan.source.component.willStop()
        if !built.plan.source.component.endsStreamsOnStop { built.pipeline.sendEvent(.endOfStream()) }
        let timeout = drainTimeout
        tasks.append(Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            await self?.drainTimedOut(after: timeout)
        })
    }

    /// Ends the run cleanly once every sink has taken `duration` of media.
    public func limit(to duration: Duration) {
        built?.limit.set(duration)
    }

    /// Tears down at once, without draining.
    public func abort() {
        guard outcome == nil else { return }
        finish(.failed("stopped at once; outputs may be incomplete"))
    }

    /// Pauses play: with a time-shifting stage (a delay) only its play-out holds, so a live
    /// stream is still taken in; else the whole pipeline pauses.
    public func pause() {
        guard state == .playing, let built else { return }
        hold(built, true)
        transition(to: .paused)
    }

    public func resume() {
        guard state == .paused, let built else { return }
        hold(built, false)
        transition(to: .playing)
    }

    private func hold(_ built: BuiltPipeline, _ held: Bool) {
        let shifting = built.plan.stages.compactMap { $0.component as? any TimeShiftingStage }
        if shifting.isEmpty { built.pipeline.setState(held ? .paused : .playing) }
        for stage in shifting { if held { stage.pausePlayout() } else { stage.resumePlayout() } }
    }

    /// The running stages that take `command`.
    private func stages(taking command: String) -> [any ControllableStage] {
        (built?.plan ?? planned).stages.compactMap { part in
            guard let stage = part.component as? any ControllableStage,
                  type(of: stage).commands.contains(where: { $0.name == command }) else { return nil }
            return stage
        }
    }

    /// Hands a command to every running stage that takes it; false when none does.
    @discardableResult
    public func perform(_ command: String, _ adjustment: StageAdjustment) -> Bool {
        let takers = stages(taking: command)
        for stage in takers { stage.perform(command, adjustment) }
        return !takers.isEmpty
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
        guard outcome == nil, !stopRequested else { throw refuse(["\(origin): the pipeline has stopped"]) }
        guard let built else { throw refuse(["\(origin): the pipeline is still starting; save the file again once it plays"]) }
        guard !swapping else { throw refuse(["\(origin): another swap is under way; try again when it is done"]) }
        let diff = SpecDiff(old: spec, new: newSpec) { index in
            Self.adjustable(at: index, built.plan, to: plan).map { $0.running.canAdjust(to: $0.replacement) } ?? false
        }
        guard !diff.isEmpty else {
            let report = SwapReport(changes: [], took: ContinuousClock.now - started)
            emitter.emit(.reloaded(changes: ["nothing changed"], took: report.took))
            return report
        }
        swapping = true
        defer {
            swapping = false
            if stopAfterSwap { stop() }
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
        generation += 1
        let swap: GraphSwap
        do {
            swap = try await GraphSwap.prepare(built, to: plan, diff: diff, builder: GraphBuilder(generation: generation))
        } catch {
            throw refuse(["\(origin): \(error)"])
        }
        retiredNames.formUnion(swap.retiredNames)
        // Paused sinks would hold the old parts' threads, and taking them out needs those threads.
        let wasPaused = state == .paused
        if wasPaused { resume() }
        if state == .buffering {
            built.pipeline.setState(.playing)
            transition(to: .playing)
        }
        let applied = await swap.apply(started: started)
        adjust(built.plan, to: plan, diff.adjustedChain)
        self.built = applied.built
        spec = newSpec
        if wasPaused { pause() }
        for note in applied.notes { emitter.emit(.notice(note)) }
        emitter.emit(.reloaded(changes: swap.changes, took: applied.took))
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
        if finished, let outcome { return outcome }
        return await withCheckedContinuation { waiters.append($0) }
    }

    private func connectionChanged(_ change: ConnectionChange, from keyPath: String) {
        guard outcome == nil else { return }
        switch change {
        case .connected:
            break
        case .reconnecting(let reason, let attempt, let delay):
            transition(to: .reconnecting)
            emitter.emit(.warning(
                "connection lost (\(reason)); reconnecting in \(String(format: "%.1f", delay.seconds)) s (attempt \(attempt))"))
        case .reconnected(let attempts):
            emitter.emit(.notice("reconnected after \(attempts) attempt\(attempts == 1 ? "" : "s")"))
            if state == .reconnecting { transition(to: .playing) }
        case .failed(let reason):
            sinkFailed(keyPath, reason: reason)
        }
    }

    /// A sink that cannot go on ends the run only when it was the last one: one destination
    /// of several refusing the key or going away for good never stops the others. The run
    /// then ends failed, naming it, whenever it ends.
    private var lostSinksText: String { lostSinks.map { "\($0.keyPath): \($0.reason)" }.joined(separator: "; ") }

    private func sinkFailed(_ keyPath: String, reason: String) {
        guard !lostSinks.contains(where: { $0.keyPath == keyPath }) else { return }
        lostSinks.append((keyPath, reason))
        let sinks = built?.plan.sinks.map(\.spec.keyPath) ?? []
        let left = sinks.filter { sink in !lostSinks.contains { $0.keyPath == sink } }.count
        guard sinks.contains(keyPath), left > 0 else { return finish(.failed(lostSinks.count == 1 ? reason : lostSinksText)) }
        emitter.emit(.warning("\(keyPath): \(reason); the other \(left == 1 ? "sink goes" : "\(left) sinks go") on"))
    }

    private func drainTimedOut(after timeout: Duration) {
        guard outcome == nil else { return }
        finish(.failed("end-of-stream did not reach the outputs within \(timeout.configText); outputs may be incomplete"))
    }

    private func handle(_ message: BusMessage) {
        guard outcome == nil, let built else { return }
        switch message {
        case .error(let source, _, _, _) where retiredNames.contains(source):
            return
        case .warning(let source, _, _) where retiredNames.contains(source):
            return
        case .error:
            if let text = failureText(message) { finish(.failed(text)) }
        case .warning(let source, let text, _):
            emitter.emit(.warning("\(owner(of: source)): \(text)"))
        case .element(_, let structure) where structure.name == "missing-plugin":
            if let line = Self.missingDecoder(in: structure) { missingDecoder = line }
        case .latency:
            // Off the streaming thread, as GStreamer asks: it takes the state lock.
            built.pipeline.recalculateLatency()
        case .endOfStream:
            emitter.emit(.endOfStream)
            finish(stopRequested ? .stopped : .completed)
        case .stateChanged(let source, _, let new, _) where source == built.pipeline.name:
            if new == .playing, state != .stopping, state != .reconnecting {
                if !hasPlayed { hasKnownEnd = built.pipeline.queryDuration() != nil }
                hasPlayed = true
                transition(to: .playing)
            }
        case .buffering(_, let percent):
            // A stage that plays out on its own clock (a delay): buffering before it only fills it,
            // and the stage says how full it is (a delay's live-edge play-out takes the source's media
            // early, so the source's own level dips at every segment without anything to hear).
            guard !built.plan.stages.contains(where: \.component.playsOutOnItsOwnClock) else { return }
            // A stream with no known end (live) once playing does not pause for its buffer: it is
            // held back by the live edge and would pause all the time; a live stream that stops
            // coming is `reconnecting` or ends (end-after).
            guard !hasPlayed || hasKnownEnd else { return }
            emitter.emit(.buffering(percent: percent))
            guard !isLive, !stopRequested, state != .paused, state != .reconnecting else { return }
            // Non-live media waits for its buffer, as a player does: fully at first; once it has
            // played, only when the buffer runs dry, resuming at half (a live HLS buffer, held
            // back by the live edge, never fills and would otherwise pause all the time).
            let pauseBelow = hasPlayed ? 1 : 100
            let resumeAt = hasPlayed ? 50 : 100
            if percent < pauseBelow, state != .buffering {
                built.pipeline.setState(.paused)
                transition(to: .buffering)
            } else if percent >= resumeAt, state == .buffering {
                built.pipeline.setState(.playing)
            }
        default:
            break
        }
    }

    /// One line for an error message: which part of the file, and what GStreamer said.
    private func failureText(_ message: BusMessage) -> String? {
        guard case .error(let source, let text, let debug, let cause) = message else { return nil }
        if let missingDecoder { return masker.mask("\(owner(of: source)): \(missingDecoder)") }
        if cause == .diskFull {
            return masker.mask("\(owner(of: source)): the disk is full (free some space, or write to another disk)")
        }
        var line = "\(owner(of: source)): \(text)"
        if let hint = debug.flatMap(Self.hint(fromDebug:)), hint != source { line += " (\(hint))" }
        return masker.mask(line)
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

    private func transition(to new: RunState) {
        guard new != state, !state.isFinal else { return }
        let old = state
        state = new
        emitter.emit(.stateChanged(from: old, to: new))
    }

    private func finish(_ result: Outcome, announce: Bool = true) {
        guard outcome == nil else { return }
        var result = result
        if !lostSinks.isEmpty, !isFailure(result) {
            result = .failed(lostSinksText)
        }
        outcome = result
        built?.pipeline.setState(.null)
        // Sinks built before a stop that came while the graph was starting are finished too: each says what it did.
        let sinks = (built?.plan ?? planned).sinks
        for task in tasks { task.cancel() }
        // The sinks' finish may wait (an RTMP publish drains up to 5 s): awaited, not blocking the actor.
        // Their notes still come before the final state, the stream's end and the waiters.
        finishing = Task {
            // What each sink observed decides as much as what the pipeline did: a publish the far
            // end never accepted fails the run however cleanly the media ended.
            var result = result
            let completed = !isFailure(result)
            for part in sinks {
                switch await part.component.finish(completed: completed) {
                case .quiet: break
                case .done(let line): emitter.emit(.notice(line))
                case .failed(let line):
                    guard !lostSinks.contains(where: { $0.keyPath == part.spec.keyPath }) else { break }
                    lostSinks.append((part.spec.keyPath, line))
                    if !isFailure(result) { result = .failed(sinks.count == 1 ? line : lostSinksText) }
                }
            }
            outcome = result
            if case .failed(let text) = result {
                if announce { emitter.emit(.failure(text)) }
                transition(to: .failed)
            } else {
                transition(to: .stopped)
            }
            channel.finish()
            finished = true
            for waiter in waiters { waiter.resume(returning: result) }
            waiters.removeAll()
        }
    }

    private func isFailure(_ outcome: Outcome) -> Bool {
        if case .failed = outcome { return true }
        return false
    }
}
