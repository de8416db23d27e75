import Foundation
import Synchronization
@_exported import GstKit
@_exported import PipelineConfig

/// What every source, stage and sink kind says about itself: its name in a
/// pipeline file, one line of help, and its options.
public protocol ComponentDescription {
    /// The key in a pipeline file, e.g. `delay` in `- delay: { initial: 10s }`.
    static var kind: String { get }
    /// One line for `castline stages`.
    static var summary: String { get }
    static var schema: OptionSchema { get }
    /// The figures it reports that mean something beyond their number (see `Figure.Meaning`).
    static var figures: [Figure] { get }
}

extension ComponentDescription {
    public static var figures: [Figure] { [] }
}

/// How a stage treats one stream of the bundle.
public enum StagePlan: Sendable, Equatable {
    /// The stage does not touch this stream.
    case passThrough
    /// The stream ends here (e.g. video in an audio-only pipeline).
    case drop
    /// The builder converts the stream to `takes`, then calls `makeBin`.
    case process(takes: FormRequirement)
}

/// A stage plugin: one entry of `stages:`. One instance serves every stream
/// it processes, so a stage that must coordinate streams (delay) can.
public protocol Stage: ComponentDescription, AnyObject, Sendable {
    init(spec: ComponentSpec, context: ComponentContext) throws
    func plan(for stream: StreamKind, arriving form: StreamForm) -> StagePlan
    /// The form the stream has after this stage, given what it took in.
    func output(for stream: StreamKind, input: StreamForm) -> StreamForm
    /// The work for one stream: a bin called `name` with one `sink` and one `src` ghost pad.
    func makeBin(for stream: StreamKind, input: StreamForm, name: String) throws -> Bin
    /// History the stage can hold: a source that can start further back (`HistoryStartingSource`)
    /// gives it that much at once. nil: it wants none.
    var historyWanted: Duration? { get }
    /// It plays out on a clock of its own (a time-shift): buffering before it only fills it, so the
    /// run does not pause for it, and a source's latency is not what plays.
    var playsOutOnItsOwnClock: Bool { get }
    /// A swap took it out of the running pipeline: it stops reporting and ends its outputs now.
    func retire()
    /// A swap rebuilt it in place of `predecessor` (same name, same kind): what it counts goes on
    /// from what that one counted, so totals are since the start of the run.
    func succeed(_ predecessor: any Stage)
    /// It takes `stream` in any form but learns more from it decoded (a level meter): where all
    /// after it decode the stream anyway, the builder decodes right after it (once, not twice)
    /// and hands it the decoded stream's pad (`watch(decoded:for:)`).
    func learnsMoreDecoded(_ stream: StreamKind) -> Bool
    func watch(decoded pad: Pad, for stream: StreamKind)
    /// It measures each stream it passes and reports it in `stats` samples: the status line,
    /// the stats outputs and `/metrics` take their per-stream figures from stages that say so.
    static var measuresStreams: Bool { get }
}

extension Stage {
    public func output(for stream: StreamKind, input: StreamForm) -> StreamForm { input }
    public var historyWanted: Duration? { nil }
    public var playsOutOnItsOwnClock: Bool { false }
    public func retire() {}
    public func succeed(_ predecessor: any Stage) {}
    public func learnsMoreDecoded(_ stream: StreamKind) -> Bool { false }
    public func watch(decoded pad: Pad, for stream: StreamKind) {}
    public static var measuresStreams: Bool { false }
}

/// A stage that takes a changed pipeline file's options while it runs, so a swap keeps it
/// (a time-shift keeps its history) instead of rebuilding it and what follows.
public protocol AdjustableStage: Stage {
    /// Whether it can take `replacement`'s options (the stage the new file made, already validated).
    func canAdjust(to replacement: any Stage) -> Bool
    func adjust(to replacement: any Stage)
}

/// A stage that can hold its play-out while it keeps taking what arrives (a time-shift): pausing
/// the run is then time-shifting. The rest of the pipeline plays on, so a live source is not
/// held back (and not taken for ended), and play-out resumes where it paused, further behind.
public protocol TimeShiftingStage: Stage {
    func pausePlayout()
    /// Returns what resuming changed (a time-shift grown by the pause), as the stage also reports it.
    func resumePlayout() -> StageEvent?
}

/// What a stage or sink may use while it runs.
public struct ComponentContext: Sendable {
    public let pipelineName: String
    /// The component's `name:`, or `KIND-INDEX` when it has none.
    public let componentName: String
    public let keyPath: String
    public let events: EventEmitter
    /// Tells the runner about a live connection the component holds (an RTMP publish).
    public let connection: @Sendable (ConnectionChange) -> Void
    /// How much later than it left the source a stage plays media out (a time-shift), where
    /// one does: a source's "what plays now" figures (programme-time latency) add it.
    public let playoutHold: PlayoutHold
    /// How many of the pipeline's sinks publish (`SinkComponent.isDestination`), those left out
    /// at the start not counted: one of several that cannot connect at first keeps trying, as
    /// the others go on.
    public let destinations: @Sendable () -> Int

    public init(
        pipelineName: String, componentName: String, keyPath: String, events: EventEmitter,
        connection: @escaping @Sendable (ConnectionChange) -> Void = { _ in }, destinations: @escaping @Sendable () -> Int = { 0 },
        playoutHold: PlayoutHold = PlayoutHold()
    ) {
        self.playoutHold = playoutHold
        self.pipelineName = pipelineName
        self.componentName = componentName
        self.keyPath = keyPath
        self.events = events
        self.connection = connection
        self.destinations = destinations
    }
}

/// How long time-shifting stages hold media between the source and the sinks, in ns: one per
/// run, set by each stage (by name) as it plays out, read by the source as their sum.
public final class PlayoutHold: Sendable {
    /// What one stage holds: nothing plays out of it yet (it fills to its delay), or this many ns,
    /// and more by as long as its play-out has been paused (since then).
    private enum Hold: Equatable { case filling, holding(Int64, pausedSince: ContinuousClock.Instant?) }
    private let holds = Mutex<[String: Hold]>([:])

    public init() {}

    /// What every stage holds together now, a pause under way included (nil: none holds anything).
    public var value: Int64? { sum(pausing: true) }

    /// What every stage adds to the time of what it plays out: a pause adds to it only once
    /// play-out resumes (after it, the output's time jumps by the pause; no frame is missing).
    public var outputShift: Int64? { sum(pausing: false) }

    /// Read on every buffer a stats stage passes (`outputShift`): the clock only where a pause adds.
    private func sum(pausing: Bool) -> Int64? {
        let now = pausing ? ContinuousClock.now : nil
        return holds.withLock { holds in
            holds.isEmpty ? nil : holds.values.reduce(0) { sum, hold in
                guard case .holding(let ns, let pausedSince) = hold else { return sum }
                guard let now, let pausedSince else { return sum + ns }
                return sum + ns + (now - pausedSince).totalNanoseconds
            }
        }
    }

    /// A stage still fills to its delay: nothing that left the source plays yet.
    public var isFilling: Bool { holds.withLock { $0.values.contains(.filling) } }

    /// `stage` holds `value` ns, and more since `pausedSince` (nil: it holds nothing any more: ended, swapped out).
    public func set(_ value: Int64?, pausedSince: ContinuousClock.Instant? = nil, by stage: String) {
        holds.withLock { $0[stage] = value.map { .holding($0, pausedSince: pausedSince) } }
    }

    /// `stage` has media and fills to its delay: nothing plays out of it yet.
    public func filling(by stage: String) {
        holds.withLock { $0[stage] = .filling }
    }
}

/// A change in a live connection a source or sink holds.
public enum ConnectionChange: Sendable, Equatable {
    case connected
    /// A source's buffer ran dry before its stream ended (a segment late): the player stalls, as
    /// hls.js and ExoPlayer do, until `buffered`.
    case stalled
    /// What the stalled source holds is enough to play on.
    case buffered
    /// Lost (or, its reason starting `notYetConnected`, never up); the sink is retrying.
    /// `attempt` counts from 1; `delay` is until the next try.
    case reconnecting(reason: String, attempt: Int, delay: Duration)
    case reconnected(attempts: Int)
    /// Cannot go on (refused key, never connected, out of retries): the run fails with this line.
    case failed(String)

    /// How a `reconnecting` reason begins for a connection that was never up: nothing was lost.
    public static let notYetConnected = "cannot connect yet: "
}

/// An error in building a pipeline, located at the component that caused it.
public struct BuildError: Error, Sendable, CustomStringConvertible {
    public var keyPath: String?
    public var message: String
    /// What was given cannot be played (exit 2), as against trouble in getting it (exit 1).
    public var isBadInput: Bool

    public init(_ message: String, at keyPath: String? = nil, badInput: Bool = false) {
        self.keyPath = keyPath
        self.message = message
        isBadInput = badInput
    }

    public var description: String {
        keyPath.map { "\($0): \(message)" } ?? message
    }
}

extension PipelineSpec {
    /// The line for an error in building this spec: `FILE:LINE:COL: key.path: message` when it is
    /// about one of the file's keys (a cross-field check a component makes), else `ORIGIN: message`.
    public func errorLine(_ error: any Error, origin: String) -> String {
        if let error = error as? BuildError, let keyPath = error.keyPath, let place = positions.location(of: keyPath) {
            return "\(place): \(error)"
        }
        return "\(origin): \(error)"
    }
}

/// A source that can start further back in its stream when a stage wants history
/// before it plays (HLS, within the playlist's live window).
public protocol HistoryStartingSource: AnyObject {
    /// Before the graph is built: the most history a stage can hold (it is given as much
    /// of it as the source has at once, so the available delay at start is what the
    /// source holds, not zero).
    func historyWanted(_ history: Duration)
}
