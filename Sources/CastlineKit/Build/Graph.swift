import GstKit
import Synchronization

/// Where a stream ends so far: the src pad to link on from, and its form.
struct Cursor {
    let pad: Pad
    let form: StreamForm
}

/// Where the parts of a built graph are: what a swap needs to take some of them
/// out of the running pipeline and join others in.
struct GraphLayout {
    /// Per chain part (the source at 0, `stages[i]` at i + 1): the elements added for it.
    var chainElements: [[Element]] = []
    /// Per chain part: the streams as they leave it.
    var cursors: [[StreamKind: Cursor]] = []
    /// Tees between the chain's end and the sinks.
    var fanOut: [Element] = []
    /// Per sink, in file order.
    var sinks: [SinkLayout] = []
    /// Where the source's streams have got to, so a new source can carry on from there.
    var sourceTimeline = TimelineJoin()
}

/// One sink's elements (its queues, conversions and bin) and where each stream enters it.
struct SinkLayout {
    var elements: [Element] = []
    var entries: [StreamKind: SinkEntry] = [:]
    /// For a sink that renders at the clock: what it would still play once the run stops is dropped,
    /// or taken at once (`SinkComponent.takesTheRestAtOnce`).
    var playout: PlayoutCut?
}

/// Lets a stopping run's end-of-stream reach a sink that renders at the clock (a sound card, a
/// window, a paced null sink or recording) at once: the media queued in front of it, up to its
/// entry queue's seconds, is dropped rather than played out first.
final class PlayoutCut: Sendable {
    private let dropping = Atomic<Bool>(false)
    /// The sink takes the rest at once instead: its pacing is stopped, nothing is dropped.
    private let sink: any SinkComponent

    init(_ sink: any SinkComponent) { self.sink = sink }

    /// A pad's first buffer always goes through: a sink still waiting for its preroll (a stop
    /// before the first play) must get one, or the pipeline never plays and its end never comes.
    func install(on pad: Pad) {
        let first = OnceFlag()
        pad.addProbe([.buffer, .bufferList]) { [self] _ in
            let prerolls = first.trip()
            return dropping.load(ordering: .relaxed) && !prerolls ? .drop : .ok
        }
    }

    func cut() {
        if sink.takesTheRestAtOnce { sink.stopPacing() } else { dropping.store(true, ordering: .relaxed) }
    }
}

/// The sink pad of the queue a stream enters a sink through, the form it takes
/// there, and the guard that keeps a swap's end-of-stream out of the sink.
struct SinkEntry {
    let pad: Pad
    let form: StreamForm
    let guardian: EntryGuard
}

/// The graph under construction, in a new pipeline or (for a swap) a running one.
struct Graph {
    let pipeline: Pipeline
    /// Where notices about the build go (the plan's channel).
    let events: EventEmitter
    var cursors: [StreamKind: Cursor] = [:]
    var owners: [String: String] = [:]
    let limit: MediaLimit
    var layout = GraphLayout()
    /// Every element added, in order.
    private(set) var added: [Element] = []
    /// Links made only when a swap joins the new parts to the running ones.
    var deferredLinks: [(from: Pad, to: Pad)] = []
    /// Stages that learn more of a stream decoded (`Stage.learnsMoreDecoded`) and pass it on
    /// encoded: the first place after them that decodes it (a later stage's input, a sink's
    /// branch) is handed to them, so one decode serves both.
    var awaitingDecoded: [(stream: StreamKind, stage: any Stage)] = []
    /// Streams the source could give as they came (encoded): a sink that must encode one
    /// after a stage decoded it records it re-encoded, and says so.
    var sourceCouldKeep: [StreamKind: StreamForm] = [:]
    /// Streams decoded at the source because a sink takes H.264 of one profile only
    /// (`SinkComponent.h264Profile`), not because a stage reads them.
    var decodedForProfile: Set<StreamKind> = []

    init(pipeline: Pipeline, events: EventEmitter, limit: MediaLimit = MediaLimit()) {
        self.pipeline = pipeline
        self.events = events
        self.limit = limit
    }

    mutating func add(_ bin: Element, owner: String) throws {
        try add(bin)
        owners[bin.name] = owner
    }

    mutating func add(_ element: Element) throws {
        try pipeline.add(element)
        added.append(element)
    }

    /// The elements added since `mark` (a count of `added` taken earlier).
    func added(since mark: Int) -> [Element] { Array(added[mark...]) }

    func pad(_ element: Element, _ name: String) throws -> Pad {
        guard let pad = element.staticPad(name) else {
            throw BuildError("internal: \(element.name) has no pad \(name)")
        }
        return pad
    }

    /// Links `element` after the cursor; the cursor moves to its src pad.
    mutating func append(_ element: Element, after cursor: Cursor) throws -> Cursor {
        try add(element)
        try cursor.pad.link(try pad(element, "sink"))
        return Cursor(pad: try pad(element, "src"), form: cursor.form)
    }

    mutating func convert(_ cursor: Cursor, _ stream: StreamKind, to requirement: FormRequirement, name: String,
                          h264Profile: String? = nil) throws -> Cursor {
        let (bin, output) = try Conversion.make(stream, from: cursor.form, to: requirement, name: name, h264Profile: h264Profile)
        guard let bin else { return cursor }
        let converted = Cursor(pad: try append(bin, after: cursor).pad, form: output)
        if cursor.form != .raw, output == .raw {
            for waiting in awaitingDecoded where waiting.stream == stream { waiting.stage.watch(decoded: converted.pad, for: stream) }
            awaitingDecoded.removeAll { $0.stream == stream }
        }
        return converted
    }

    /// An encoded stream parsed into the framing `caps` gives, once for every branch of the tee
    /// after it (part of the fan-out). nil when its codec has no parser.
    mutating func frame(_ cursor: Cursor, caps: String, name: String) throws -> Cursor? {
        guard case .encoded(let codec?) = cursor.form, let parser = Conversion.parserFactories[codec] else { return nil }
        let bin = try BinChain.make(name, [try ElementCatalog.make(parser), try BinChain.capsFilter(caps)])
        layout.fanOut.append(bin)
        return Cursor(pad: try append(bin, after: cursor).pad, form: cursor.form)
    }

    func discard(_ cursor: Cursor) {
        cursor.pad.discardData()
    }

    mutating func split(_ cursor: Cursor, count: Int, name: String) throws -> [Cursor] {
        let tee = try ElementCatalog.make("tee", name: name)
        try add(tee)
        layout.fanOut.append(tee)
        try cursor.pad.link(try pad(tee, "sink"))
        return try (0..<count).map { _ in
            guard let branch = tee.requestPad("src_%u") else { throw BuildError("internal: tee gave no pad") }
            return Cursor(pad: branch, form: cursor.form)
        }
    }
}
