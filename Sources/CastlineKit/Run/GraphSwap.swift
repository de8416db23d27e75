import Foundation
import GstKit
import Synchronization

/// Replaces part of a running pipeline with the parts of a new spec, keeping
/// what did not change running (see `SpecDiff`): the chain before the first
/// change, and every unchanged sink with its connection.
///
/// In two steps, so a bad file never disturbs the pipeline: `prepare` makes and
/// builds the new parts beside the running ones, linked to nothing that runs;
/// `apply` blocks the kept prefix's outputs, lets the old parts drain (their
/// end-of-stream is kept out of the kept sinks), unlinks and removes them, links
/// the new parts in, and sets them playing. A new source's timestamps are moved
/// to start where the old source's ended, so the sinks see no jump and no gap.
struct GraphSwap {
    let old: BuiltPipeline
    let plan: PipelinePlan
    /// Chain parts kept from the running pipeline (0: the source is replaced too).
    let keptChain: Int
    let keptSinks: Set<Int>
    /// What `apply` adds to the running pipeline, linked among themselves.
    private let graph: Graph
    let changes: [String]

    /// How long the old parts get to drain before they are cut off.
    static let drainTimeout = Duration.seconds(2)

    /// Plans and builds the new parts. Throws with the running pipeline untouched.
    nonisolated(nonsending) static func prepare(_ old: BuiltPipeline, to planned: PipelinePlan, diff: SpecDiff, builder: GraphBuilder) async throws -> GraphSwap {
        if let refusal = diff.refusal { throw BuildError(refusal) }
        let fresh = planned.suffixed(builder.nameSuffix)
        var keptChain = diff.keptChain
        var changes = diff.changes
        var plan = merge(old.plan, fresh, keptChain: keptChain, keptSinks: diff.keptSinks)
        if keptChain > 0, GraphBuilder.wantedStreams(plan) != GraphBuilder.wantedStreams(old.plan) {
            // The kept source would have to give other streams: it is replaced too.
            keptChain = 0
            changes.append("source restarted (the streams it gives change)")
            plan = merge(old.plan, fresh, keptChain: 0, keptSinks: diff.keptSinks)
        }
        // A stage rebuilt under its old name counts on from the one it replaces.
        let running = Dictionary(old.plan.stages.enumerated().map { ($1.spec.stageName(at: $0), $1) }) { first, _ in first }
        for (index, part) in plan.stages.enumerated() {
            if let predecessor = running[part.spec.stageName(at: index)], predecessor.component !== part.component,
               predecessor.spec.kind == part.spec.kind {
                part.component.succeed(predecessor.component)
            }
        }
        for (index, part) in plan.sinks.enumerated() where !diff.keptSinks.contains(index) {
            try await located(part.spec.keyPath) { try await part.component.preflight() }
        }
        if keptChain == 0 {
            // A new SRT caller of the same listener plays from the running connection.
            plan.source.component.share(old.plan.source.component)
            try await plan.prepareSource()
        }
        var graph = Graph(pipeline: old.pipeline, events: fresh.channel.emitter, limit: old.limit)
        graph.owners = old.owners
        graph.layout.chainElements = Array(old.layout.chainElements.prefix(keptChain))
        graph.layout.cursors = Array(old.layout.cursors.prefix(keptChain))
        if keptChain > 0 { graph.layout.sourceTimeline = old.layout.sourceTimeline }
        do {
            var entries: [Element] = []
            if keptChain == 0 {
                try builder.addSource(plan, to: &graph)
            } else {
                // The kept prefix's streams enter the new parts through an identity each, linked at `apply`.
                for (stream, cursor) in old.layout.cursors[keptChain - 1] {
                    let entry = try ElementCatalog.make("identity", name: "swap-in-\(stream)\(builder.nameSuffix)")
                    try graph.add(entry)
                    entries.append(entry)
                    graph.deferredLinks.append((cursor.pad, try graph.pad(entry, "sink")))
                    graph.cursors[stream] = Cursor(pad: try graph.pad(entry, "src"), form: cursor.form)
                }
            }
            try builder.addStages(plan.stages.dropFirst(max(0, keptChain - 1)), sinks: plan.sinks, to: &graph)
            // The entries go with the first new part, or with the fan-out when only sinks change.
            if keptChain > 0, keptChain < graph.layout.chainElements.count {
                graph.layout.chainElements[keptChain] += entries
            } else {
                graph.layout.fanOut += entries
            }
            let keptLayouts = Dictionary(uniqueKeysWithValues: diff.keptSinks.map { ($0, old.layout.sinks[$0]) })
            try builder.addSinks(plan.sinks, kept: keptLayouts, to: &graph)
        } catch {
            for element in graph.added(since: 0).reversed() {
                element.setState(.null)
                try? old.pipeline.remove(element)
            }
            // What the new source opened at the far end (a WHEP session, an SRT connection) is closed.
            if keptChain == 0 { await plan.source.component.finish() }
            throw error
        }
        // Until `apply`, the new parts keep out of the pipeline's state changes (a pause, buffering):
        // unlinked, a new live source set going would fail not-linked.
        for element in graph.added(since: 0) { element.setLockedState(true) }
        return GraphSwap(old: old, plan: plan, keptChain: keptChain, keptSinks: diff.keptSinks, graph: graph, changes: changes)
    }

    /// The new plan with the running components kept where the parts are kept.
    static func merge(_ old: PipelinePlan, _ fresh: PipelinePlan, keptChain: Int, keptSinks: Set<Int>) -> PipelinePlan {
        PipelinePlan(
            spec: fresh.spec, channel: fresh.channel,
            source: keptChain > 0 ? old.source : fresh.source,
            stages: fresh.stages.indices.map { $0 + 1 < keptChain ? old.stages[$0] : fresh.stages[$0] },
            sinks: fresh.sinks.indices.map { keptSinks.contains($0) ? old.sinks[$0] : fresh.sinks[$0] })
    }

    /// The running parts that go: the chain from the first change on, the fan-out, and the changed sinks.
    private var retired: [Element] {
        old.layout.chainElements.dropFirst(keptChain).flatMap { $0 } + old.layout.fanOut
            + old.layout.sinks.indices.filter { !keptSinks.contains($0) }.flatMap { old.layout.sinks[$0].elements }
    }

    /// The names of every element that goes, at any depth.
    var retiredNames: Set<String> {
        Set(retired.flatMap { element in [element.name] + ((element as? Bin)?.descendants.map(\.name) ?? []) })
    }

    private var retiredSinks: [PipelinePlan.Part<any SinkComponent>] {
        old.plan.sinks.indices.filter { !keptSinks.contains($0) }.map { old.plan.sinks[$0] }
    }

    /// Swaps the new parts in. Returns the new built pipeline and what the retired sinks said as they finished.
    nonisolated(nonsending) func apply(started: ContinuousClock.Instant) async -> Applied {
        old.limit.swapApplied()
        let keptEntries = keptSinks.sorted().flatMap { old.layout.sinks[$0].entries.values }
        let retiredSinkElements = old.layout.sinks.indices.filter { !keptSinks.contains($0) }
            .flatMap { old.layout.sinks[$0].elements.compactMap { $0 as? Bin } }.flatMap(\.sinks)
        // 1. Everything that will see the old parts' end-of-stream.
        let drained = Arrivals(keptEntries.count + retiredSinkElements.count)
        for entry in keptEntries { entry.guardian.expectDrain { drained.arrive() } }
        for sink in retiredSinkElements {
            for pad in sink.sinkPads { pad.notifyEndOfStream { drained.arrive() } }
        }
        // 2. Stop what feeds the old parts, and end them (a retired stage stops reporting, and
        // one that holds media back (a time-shift) ends at once rather than playing its history out).
        for part in old.plan.stages.dropFirst(max(0, keptChain - 1)) { part.component.retire() }
        let join = old.layout.sourceTimeline
        var blocks: [(Pad, ProbeID)] = []
        // The kept prefix's threads, each held at its block: only then may the old parts be taken
        // out (a buffer still inside one as it is set to NULL would come back flushing and stop
        // that thread for good).
        let held = Arrivals(keptChain == 0 ? 0 : old.layout.cursors[keptChain - 1].count)
        if keptChain == 0 {
            plan.source.component.takeOver()
            old.plan.source.component.willStop()
            old.pipeline.element(named: old.plan.source.binName)?.sendEvent(.endOfStream())
        } else {
            // Held at the kept prefix's outputs. The old parts are ended from the held thread:
            // sent from here, the end-of-stream would wait for a stream lock that thread may hold.
            for cursor in old.layout.cursors[keptChain - 1].values {
                let ended = OnceFlag()
                // Only the old part is ended: data that first reaches the block after the pad
                // was linked to the new parts must not end them (their sinks would refuse all after).
                let oldPart = cursor.pad.peer
                let block = cursor.pad.addProbe(.blockDownstream) { info in
                    if let oldPart, info.pad?.peer == oldPart, ended.trip() {
                        _ = oldPart.sendEvent(.endOfStream())
                        held.arrive()
                    }
                    return .ok
                }
                if let block { blocks.append((cursor.pad, block)) }
            }
        }
        _ = await drained.wait(timeout: Self.drainTimeout)
        _ = await held.wait(timeout: Self.drainTimeout)
        for entry in keptEntries { entry.guardian.cancelDrain() }
        // 3. Out with the old parts.
        if keptChain > 0 {
            for cursor in old.layout.cursors[keptChain - 1].values {
                if let peer = cursor.pad.peer { _ = cursor.pad.unlink(peer) }
            }
        }
        for entry in keptEntries {
            if let peer = entry.pad.peer { _ = peer.unlink(entry.pad) }
        }
        var owners = graph.owners
        let retired = retired
        for element in retired {
            element.setLockedState(true)
            try? old.pipeline.remove(element)
            owners[element.name] = nil
        }
        // On a thread of its own: an old part whose thread is still stuck downstream must not hold up the swap.
        Thread.detachNewThread { for element in retired.reversed() { element.setState(.null) } }
        // 4. In with the new: linked, timed on from the old source's end, then playing from the sinks up.
        if keptChain == 0 {
            for (stream, cursor) in graph.layout.cursors[0] { join.join(cursor.pad, stream: stream) }
            for (stream, cursor) in graph.layout.cursors[0] { graph.layout.sourceTimeline.follow(cursor.pad, stream: stream) }
        }
        var notes: [String] = []
        for (from, to) in graph.deferredLinks {
            do { try from.link(to) } catch { notes.append("swap: \(error)") }
        }
        let arrived = Arrivals(1)
        for entry in keptEntries { entry.guardian.expectMedia { arrived.arrive() } }
        // PLAYING, where the run put the pipeline for the swap (`swapApplying`), not synced to the
        // pipeline: a new sink's preroll makes it lose its state to PAUSED, and a new live source
        // synced to that would wait in PAUSED for media that only it can give.
        for element in graph.added(since: 0).reversed() {
            element.setLockedState(false)
            element.setState(.playing)
        }
        for (pad, block) in blocks { pad.removeProbe(block) }
        // A kept encoder starts the new part on a keyframe; a new one does anyway.
        for entry in keptEntries { _ = entry.pad.peer?.sendEvent(.upstreamForceKeyUnit()) }
        if !keptEntries.isEmpty { _ = await arrived.wait(timeout: .seconds(5)) }
        let took = ContinuousClock.now - started
        if keptChain == 0 { await old.plan.source.component.finish() }
        for part in retiredSinks {
            switch await part.component.finish(completed: true) {
            case .quiet: break
            case .done(let line): notes.append(line)
            case .failed(let line): notes.append("\(part.spec.keyPath): \(line)")
            }
        }
        let built = BuiltPipeline(pipeline: old.pipeline, plan: plan, owners: owners, limit: old.limit, layout: graph.layout)
        return Applied(built: built, notes: notes, took: took)
    }

    /// The pipeline went down before the swap was applied, or as it was: what the new source
    /// opened at the far end is closed (the run's end finished the parts it had then).
    nonisolated(nonsending) func discard(applied: Bool) async {
        // Not yet applied, they are locked out of the pipeline's state changes since `prepare`:
        // taken down and out here. Applied, they are the pipeline's, which the run's end takes down.
        for element in applied ? [] : graph.added(since: 0).reversed() {
            element.setLockedState(false)
            element.setState(.null)
            try? old.pipeline.remove(element)
        }
        if keptChain == 0 { await plan.source.component.finish() }
    }

    struct Applied {
        let built: BuiltPipeline
        /// What the retired sinks said as they finished, and links that failed.
        let notes: [String]
        /// From the request to the first new media at a kept sink.
        let took: Duration
    }
}

/// Counts arrivals from GStreamer's threads (a pad reached its block, end-of-stream went
/// through a pad); `wait` resumes at the last one, or at the timeout, without polling.
final class Arrivals: Sendable {
    private let state: Mutex<(remaining: Int, waiter: CheckedContinuation<Bool, Never>?, expired: Bool)>

    init(_ count: Int) { state = Mutex((count, nil, false)) }

    func arrive() {
        let waiter: CheckedContinuation<Bool, Never>? = state.withLock { state in
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: true)
    }

    /// True when all arrived in time.
    nonisolated(nonsending) func wait(timeout: Duration) async -> Bool {
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.giveUp()
        }
        defer { timer.cancel() }
        return await withCheckedContinuation { continuation in
            let answer: Bool? = state.withLock { state in
                if state.remaining <= 0 { return true }
                if state.expired { return false }
                state.waiter = continuation
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    private func giveUp() {
        let waiter = state.withLock { state in
            state.expired = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: false)
    }
}
