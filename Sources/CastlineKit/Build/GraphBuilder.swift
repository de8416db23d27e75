import GstKit
import PipelineConfig

/// The components of a spec, made and checked once, before any GStreamer element exists.
// @unchecked: a plan is made by the planner and handed to one runner, which alone uses its
// components from then on (what they start on GStreamer's threads guards itself).
public struct PipelinePlan: @unchecked Sendable {
    public struct Part<Component> {
        public let spec: ComponentSpec
        public let component: Component
        /// The bin's name in the graph, unique in the pipeline.
        public let binName: String

        func suffixed(_ suffix: String) -> Part {
            Part(spec: spec, component: component, binName: binName + suffix)
        }
    }

    public let spec: PipelineSpec
    /// Where the components report (see `RunChannel`).
    public let channel: RunChannel
    public let source: Part<any SourceComponent>
    public let stages: [Part<any Stage>]
    public let sinks: [Part<any SinkComponent>]
}

extension PipelinePlan {
    /// The same plan with `suffix` on every bin name: a swap's new parts need names the running ones do not have.
    func suffixed(_ suffix: String) -> PipelinePlan {
        PipelinePlan(spec: spec, channel: channel, source: source.suffixed(suffix),
                     stages: stages.map { $0.suffixed(suffix) }, sinks: sinks.map { $0.suffixed(suffix) })
    }

    /// Lets the source fetch what it must know before the graph is built (a
    /// playlist), and tells it how much history a stage wants at the start. Told
    /// here, not only by the stage's own request: that goes upstream when the
    /// stream's start reaches the stage, and a parser in between holds it back until
    /// the first buffer has left the source (the start-back then came too late).
    nonisolated(nonsending) public func prepareSource() async throws {
        // A source that can start further back needs to know before it picks where to start.
        if let starting = source.component as? any HistoryStartingSource,
           let history = stages.compactMap(\.component.historyWanted).max() {
            starting.historyWanted(history)
        }
        try await source.component.prepare(wanted: GraphBuilder.wantedStreams(self))
    }
}

/// A built graph, not yet running.
public struct BuiltPipeline {
    public let pipeline: Pipeline
    public let plan: PipelinePlan
    /// Component bin name → key path, to say which part of the file an error came from.
    public let owners: [String: String]
    /// Ends every sink input after a given amount of media (`--duration`).
    public let limit: MediaLimit
    /// Where each part's elements are, for a swap.
    let layout: GraphLayout

    /// The same graph running another plan (its parts adjusted in place).
    func with(plan: PipelinePlan) -> BuiltPipeline {
        BuiltPipeline(pipeline: pipeline, plan: plan, owners: owners, limit: limit, layout: layout)
    }
}

/// Turns a plan into a GStreamer graph: source → stages → sinks over a bundle
/// of streams, converting between forms where one part gives what the next
/// does not take.
public struct GraphBuilder {
    /// Counts swaps: the parts a swap builds get names the running ones do not have.
    let generation: Int

    public init(generation: Int = 0) {
        self.generation = generation
    }

    /// Appended to the names of a swap's new parts.
    var nameSuffix: String { generation == 0 ? "" : "-g\(generation)" }

    public func build(_ plan: PipelinePlan) throws -> BuiltPipeline {
        var graph = Graph(pipeline: Pipeline(name: plan.spec.name), events: plan.channel.emitter)
        try addSource(plan, to: &graph)
        for (stream, cursor) in graph.cursors { graph.layout.sourceTimeline.follow(cursor.pad, stream: stream) }
        try addStages(plan.stages[...], sinks: plan.sinks, to: &graph)
        // `--duration` ends the streams where what plays leaves the chain (the source's outputs, or
        // a time-shift's, which plays later than its source sends), so every stage from there sees
        // the end the sinks see: a stats stage's last sample holds all a recording does. Each sink
        // input keeps its own count too: it ends the streams after a swap.
        let played = plan.stages.lastIndex { $0.component.playsOutOnItsOwnClock }.map { $0 + 1 } ?? 0
        if graph.layout.cursors.indices.contains(played) {
            for cursor in graph.layout.cursors[played].values { graph.limit.watch(cursor.pad, at: .chainOutput) }
        }
        try addSinks(plan.sinks, to: &graph)
        return BuiltPipeline(pipeline: graph.pipeline, plan: plan, owners: graph.owners, limit: graph.limit, layout: graph.layout)
    }

    func addSource(_ plan: PipelinePlan, to graph: inout Graph) throws {
        let sourcePart = plan.source
        let mark = graph.added.count
        try located(sourcePart.spec.keyPath) {
            let wanted = Self.wantedStreams(plan)
            var streams = try sourcePart.component.streams().filter { wanted.contains($0.key) }
            let encodedForms = try sourcePart.component.encodedForms()
            graph.sourceCouldKeep = encodedForms
            for (stream, encoded) in encodedForms {
                if takesAsItIs(stream, encoded, stages: plan.stages[...], sinks: plan.sinks) {
                    streams[stream] = encoded
                } else if Self.needsProfile(stream, encoded, sinks: plan.sinks) {
                    graph.decodedForProfile.insert(stream)
                }
            }
            let bin = try sourcePart.component.makeBin(streams: streams, name: sourcePart.binName)
            try graph.add(bin, owner: sourcePart.spec.keyPath)
            for (stream, form) in streams {
                graph.cursors[stream] = Cursor(pad: try graph.pad(bin, stream.rawValue), form: form)
            }
        }
        graph.layout.chainElements.append(graph.added(since: mark))
        graph.layout.cursors.append(graph.cursors)
    }

    func addStages(_ stages: ArraySlice<PipelinePlan.Part<any Stage>>, sinks: [PipelinePlan.Part<any SinkComponent>],
                   to graph: inout Graph) throws {
        for (index, part) in zip(stages.indices, stages) {
            let mark = graph.added.count
            // A stage for a stream the pipeline does not carry (a video filter on sound only) is said
            // to do nothing: it would work on a stream not here, and on none that is.
            let carried = graph.cursors.keys.sorted()
            func passes(_ stream: StreamKind) -> Bool {
                if case .passThrough = part.component.plan(for: stream, arriving: graph.cursors[stream]?.form ?? .raw) { true } else { false }
            }
            let elsewhere = StreamKind.allCases.contains { stream in
                guard graph.cursors[stream] == nil else { return false }
                if case .process = part.component.plan(for: stream, arriving: .raw) { return true } else { return false }
            }
            if !carried.isEmpty, elsewhere, carried.allSatisfy(passes) {
                let streams = carried.map(\.rawValue).joined(separator: " and ")
                graph.events.emit(.notice("\(part.spec.keyPath): does nothing here: it works on none of the streams the pipeline "
                                          + "carries (\(streams))"))
            }
            try located(part.spec.keyPath) {
                try addStage(part, to: &graph) { stream in
                    Self.decodedAfter(stream, stages: stages[(index + 1)...], sinks: sinks)
                }
            }
            graph.layout.chainElements.append(graph.added(since: mark))
            graph.layout.cursors.append(graph.cursors)
        }
    }

    /// The streams some part of the pipeline uses: a stream the first stage that
    /// touches it drops (video before `audio-only`) is never decoded, or even built.
    public static func wantedStreams(_ plan: PipelinePlan) -> Set<StreamKind> {
        Set(StreamKind.allCases.filter { stream in
            for part in plan.stages {
                switch part.component.plan(for: stream, arriving: .raw) {
                case .passThrough: continue
                case .drop: return false
                case .process: return true
                }
            }
            return true
        })
    }

    /// Whether the first part that handles `stream` takes it in `form`: then the
    /// source hands it over as it is, and nothing is decoded to be encoded again.
    private func takesAsItIs(
        _ stream: StreamKind, _ form: StreamForm,
        stages: ArraySlice<PipelinePlan.Part<any Stage>>, sinks: [PipelinePlan.Part<any SinkComponent>]
    ) -> Bool {
        // H.264 whose profile is known only once it flows, for a sink that takes one profile: decoded
        // (encoded for it again) unless a stage takes it encoded only (then an encode stage before that sets it).
        let profiled = Self.needsProfile(stream, form, sinks: sinks)
        for part in stages {
            switch part.component.plan(for: stream, arriving: form) {
            case .passThrough: continue
            case .drop: return true
            case .process(let takes): return takes.accepts(form) && !(profiled && takes.accepts(.raw))
            }
        }
        if profiled { return false }
        // Kept encoded when every sink takes it so, or when one does and the codec is known,
        // so the others can decode their own copy (a recording keeps the original stream).
        let requirements = sinks.compactMap { $0.component.requirement(for: stream) }
        guard requirements.contains(where: { $0.accepts(form) }) else { return false }
        return requirements.allSatisfy { $0.accepts(form) } || form != .encoded(nil)
    }

    /// `stream` comes as H.264, and a sink that takes it takes one profile only.
    static func needsProfile(_ stream: StreamKind, _ form: StreamForm, sinks: [PipelinePlan.Part<any SinkComponent>]) -> Bool {
        form == .encoded(.h264) && sinks.contains { $0.component.requirement(for: stream) != nil && $0.component.h264Profile != nil }
    }

    /// Whether everything after a stage decodes `stream` anyway: every later stage that works on it
    /// takes it raw, and every sink that takes it takes it only raw.
    static func decodedAfter(_ stream: StreamKind, stages: ArraySlice<PipelinePlan.Part<any Stage>>,
                             sinks: [PipelinePlan.Part<any SinkComponent>]) -> Bool {
        for part in stages {
            switch part.component.plan(for: stream, arriving: .raw) {
            case .passThrough: continue
            case .drop: return false
            case .process(let takes): if !takes.accepts(.raw) { return false }
            }
        }
        let takers = sinks.compactMap { $0.component.requirement(for: stream) }
        return !takers.isEmpty && takers.allSatisfy { $0 == .raw }
    }

    private func addStage(_ part: PipelinePlan.Part<any Stage>, to graph: inout Graph,
                          decodedAfter: (StreamKind) -> Bool) throws {
        for stream in graph.cursors.keys.sorted() {
            guard let cursor = graph.cursors[stream] else { continue }
            switch part.component.plan(for: stream, arriving: cursor.form) {
            case .passThrough:
                continue
            case .drop:
                graph.discard(cursor)
                graph.cursors[stream] = nil
            case .process(let takes):
                let converted = try graph.convert(cursor, stream, to: takes, name: "\(part.binName)-\(stream)-in")
                let work = try part.component.makeBin(for: stream, input: converted.form, name: "\(part.binName)-\(stream)")
                try graph.add(work, owner: part.spec.keyPath)
                try converted.pad.link(try graph.pad(work, "sink"))
                let output = part.component.output(for: stream, input: converted.form)
                graph.cursors[stream] = Cursor(pad: try graph.pad(work, "src"), form: output)
                // It reads the stream where it is first decoded after it: right after it when all that
                // follows decodes anyway (once, for all), else where a later part or a sink's branch does.
                if output != .raw, part.component.learnsMoreDecoded(stream) {
                    graph.awaitingDecoded.append((stream, part.component))
                    if decodedAfter(stream), let cursor = graph.cursors[stream] {
                        graph.cursors[stream] = try graph.convert(cursor, stream, to: .raw, name: "\(part.binName)-\(stream)-decoded")
                    }
                }
            }
        }
    }

    /// Adds the sinks, each stream through a queue of its own (but for a sole sink that takes
    /// streams as they come). `kept` are sinks (by index) that are running already: the streams
    /// are joined to where they enter them, links the swap makes (`deferredLinks`) once the old
    /// parts are out.
    func addSinks(_ sinks: [PipelinePlan.Part<any SinkComponent>], kept: [Int: SinkLayout] = [:], to graph: inout Graph) throws {
        // Which sinks take each stream; a stream no sink takes ends in a discard.
        var branches: [StreamKind: [Cursor]] = [:]
        // Streams put in their takers' one framing before the tee: their branches need no parser.
        var framed: Set<StreamKind> = []
        for (stream, cursor) in graph.cursors {
            let takers = sinks.filter { $0.component.requirement(for: stream) != nil }
            if takers.isEmpty {
                graph.events.emit(.notice("\(stream) is not taken by any sink; it is discarded"))
                graph.discard(cursor)
            } else if takers.count == 1 {
                branches[stream] = [cursor]
            } else {
                var shared = cursor
                if let caps = Self.commonFraming(takers, stream, form: cursor.form),
                   let parsed = try graph.frame(cursor, caps: caps, name: "\(stream)-framing\(nameSuffix)") {
                    shared = parsed
                    framed.insert(stream)
                }
                branches[stream] = try graph.split(shared, count: takers.count, name: "\(stream)-tee\(nameSuffix)")
            }
        }
        for (index, part) in sinks.enumerated() {
            if let running = kept[index] {
                try located(part.spec.keyPath) { try join(part, running, branches: &branches, graph: &graph) }
                graph.layout.sinks.append(running)
                continue
            }
            let mark = graph.added.count
            var layout = SinkLayout()
            try located(part.spec.keyPath) {
                var inputs: [StreamKind: Cursor] = [:]
                // Only a sole sink taking a sole stream goes without a queue: a tee, or one thread
                // feeding two of its inputs, would wait on one input's preroll for ever.
                let taken = branches.keys.filter { part.component.requirement(for: $0) != nil }
                var reencoded: [StreamKind] = []
                defer {
                    if !reencoded.isEmpty {
                        let them = reencoded.count == 1 ? "it" : "them"
                        let why = graph.decodedForProfile.isSuperset(of: reencoded)
                            ? "a sink takes H.264 constrained baseline only, which the source's is not known to be"
                            : "a stage decodes \(them) (to read or change \(them))"
                        let streams = reencoded.map(\.rawValue).joined(separator: " and ")
                        graph.events.emit(.notice("\(part.spec.keyPath): the \(streams) came encoded, and \(why): encoded again here"))
                    }
                }
                let alone = part.component.takesStreamsAsTheyCome && sinks.count == 1 && taken.count == 1
                for stream in branches.keys.sorted() {
                    guard let requirement = part.component.requirement(for: stream),
                          let cursor = branches[stream]?.removeFirst() else { continue }
                    // Each sink input gets its own thread, so one stream never starves another in a muxer.
                    let entryElement = alone ? try ElementCatalog.make("identity") : try BinChain.queue()
                    let queued = try graph.append(entryElement, after: cursor)
                    let entry = SinkEntry(pad: try graph.pad(entryElement, "sink"), form: cursor.form, guardian: EntryGuard(stream: stream))
                    entry.guardian.install(on: entry.pad)
                    layout.entries[stream] = entry
                    graph.limit.watch(queued.pad, at: .sinkInput)
                    // Only where the sink could have taken it as it came (not a codec of its own, as VP8 into WebM).
                    if cursor.form == .raw, !requirement.accepts(.raw), let came = graph.sourceCouldKeep[stream], requirement.accepts(came) {
                        reencoded.append(stream)
                    }
                    inputs[stream] = (alone && requirement.accepts(cursor.form)) || framed.contains(stream) ? queued
                        : try graph.convert(queued, stream, to: requirement, name: "\(part.binName)-\(stream)-in",
                                            h264Profile: part.component.h264Profile)
                }
                // A sink that takes none of the streams would hold the pipeline at preroll for ever.
                guard !inputs.isEmpty else {
                    let carried = graph.cursors.keys.map(\.rawValue).sorted().joined(separator: " and ")
                    let takes = StreamKind.allCases.filter { part.component.requirement(for: $0) != nil }.map(\.rawValue)
                    throw BuildError("it takes \(takes.joined(separator: " and ")), and the pipeline carries only \(carried) "
                                     + "(give the source what it takes, or pick a sink for \(carried))", badInput: true)
                }
                let bin = try part.component.makeBin(inputs: inputs.mapValues(\.form), name: part.binName)
                try graph.add(bin, owner: part.spec.keyPath)
                if part.component.rendersAtTheClock {
                    let playout = PlayoutCut(part.component)
                    for stream in inputs.keys { playout.install(on: try graph.pad(bin, stream.rawValue)) }
                    layout.playout = playout
                }
                for (stream, cursor) in inputs {
                    try cursor.pad.link(try graph.pad(bin, stream.rawValue))
                }
            }
            layout.elements = graph.added(since: mark)
            graph.layout.sinks.append(layout)
        }
    }

    /// The framing every taker of `stream` fixes, when they all fix the same one and take `form` as it is.
    private static func commonFraming(_ takers: [PipelinePlan.Part<any SinkComponent>], _ stream: StreamKind, form: StreamForm) -> String? {
        let framings = Set(takers.map { $0.component.framing(for: stream) })
        guard framings.count == 1, let caps = framings.first ?? nil,
              takers.allSatisfy({ $0.component.requirement(for: stream)?.accepts(form) == true }) else { return nil }
        return caps
    }

    /// Leads each stream a running sink takes to where it enters that sink, in the form it takes there.
    private func join(
        _ part: PipelinePlan.Part<any SinkComponent>, _ running: SinkLayout,
        branches: inout [StreamKind: [Cursor]], graph: inout Graph
    ) throws {
        for stream in StreamKind.allCases where part.component.requirement(for: stream) != nil {
            switch (running.entries[stream], branches[stream]?.isEmpty == false) {
            case (let entry?, true):
                guard let cursor = branches[stream]?.removeFirst() else { continue }
                let joined = try graph.convert(cursor, stream, to: entry.form.asRequirement,
                                               name: "\(part.binName)-\(stream)-join\(nameSuffix)")
                graph.deferredLinks.append((joined.pad, entry.pad))
            case (.some, false):
                throw BuildError("the new file gives no \(stream), which this sink takes while it runs (change the sink too, and it reconnects)")
            case (nil, true):
                throw BuildError("the new file adds \(stream), which this sink did not take when it started (change the sink too, and it reconnects)")
            case (nil, false):
                continue
            }
        }
    }
}

extension StreamForm {
    /// What takes exactly this form.
    var asRequirement: FormRequirement {
        switch self {
        case .raw: .raw
        case .encoded(let codec): .encoded(codec.map { [$0] } ?? [])
        }
    }
}

/// Runs `body`, giving any error that lacks one the key path of the component at fault.
func located<T>(_ keyPath: String, _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch {
        throw located(error, keyPath)
    }
}

/// The async form of `located`.
nonisolated(nonsending) func located<T>(_ keyPath: String, _ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch {
        throw located(error, keyPath)
    }
}

private func located(_ error: any Error, _ keyPath: String) -> BuildError {
    switch error {
    case let error as BuildError where error.keyPath != nil: error
    case let error as BuildError: BuildError(error.message, at: keyPath, badInput: error.isBadInput)
    default: BuildError("\(error)", at: keyPath)
    }
}
