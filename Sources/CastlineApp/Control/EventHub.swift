import CastlineKit
import Foundation
import StagePlugins
import Synchronization

/// One runner's events, fanned out: the runner's own stream has a single
/// reader, so the run session feeds every event in here and any number of
/// readers (server-sent event clients, a request waiting for a delay change)
/// subscribe. Each subscriber sees the events published after it subscribed.
/// The hub also keeps the latest figures, for `GET /status`.
final class EventHub: Sendable {
    private struct State {
        var subscribers: [Int: AsyncStream<RunEvent>.Continuation] = [:]
        var nextID = 0
        var finished = false
        var figures: LatestFigures
    }

    private let state: Mutex<State>

    init(commands: [StageCommand]) {
        state = Mutex(State(figures: LatestFigures(commands: commands)))
    }

    /// Hands `event` to every subscriber and notes its figures.
    func publish(_ event: RunEvent) {
        let subscribers = state.withLock { state -> [AsyncStream<RunEvent>.Continuation] in
            guard !state.finished else { return [] }
            state.figures.add(event)
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.yield(event) }
    }

    /// Events from now on, until the run ends. A reader that falls far behind
    /// loses the oldest events it has not read (it is a live view, not a log).
    func subscribe() -> AsyncStream<RunEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: RunEvent.self, bufferingPolicy: .bufferingNewest(1024))
        let id: Int? = state.withLock { state in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.subscribers[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// The run is over: every subscription ends.
    func finish() {
        let subscribers = state.withLock { state -> [AsyncStream<RunEvent>.Continuation] in
            state.finished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers { subscriber.finish() }
    }

    var figures: LatestFigures { state.withLock { $0.figures } }

    /// The pipeline's stats stages, in order (see `LatestFigures.measuringStages`), as built and after each swap.
    func setMeasuringStages(_ names: [String]) {
        state.withLock { $0.figures.measuringStages = names }
    }
}

/// The latest figures a run reported: every stats stage's last sample per
/// stream, and the figures stage commands move (`delay_s`, `gain_db`).
struct LatestFigures: Sendable {
    struct Entry: Sendable {
        var time: Date
        var sample: StatsSample
    }

    /// The commands the stages may take: the figures they move are kept.
    let commands: [StageCommand]
    /// Samples by stage and stream, in the order they first came.
    private(set) var entries: [Entry] = []
    /// The pipeline's stats stages in pipeline order: the outermost that has reported streams
    /// gives the position, as it speaks on the status line.
    var measuringStages: [String] = []
    /// The latest value of each command figure.
    private(set) var commandFigures: [String: Double] = [:]
    /// The alarms raised now, and how many were raised in all.
    private(set) var alarms = AlarmBook()

    init(commands: [StageCommand]) {
        self.commands = commands
    }

    mutating func add(_ event: RunEvent) {
        switch event.kind {
        case .stats(let sample):
            if let index = entries.firstIndex(where: { $0.sample.stage == sample.stage && $0.sample.stream == sample.stream }) {
                entries[index] = Entry(time: event.time, sample: sample)
            } else {
                entries.append(Entry(time: event.time, sample: sample))
            }
            commandFigures.merge(commands.moved(in: sample.figures)) { $1 }
        case .stage(let stageEvent):
            commandFigures.merge(commands.moved(in: stageEvent.figures)) { $1 }
            alarms.add(stageEvent)
        case .reloaded:
            // Stages may have gone or been renamed: only figures from the new pipeline count.
            entries.removeAll()
        default:
            break
        }
    }

    /// Whether `position` is read from samples taken after `time` only: every stream of the stats
    /// stage it reads, or else a stage's own sample with a position.
    func positionSampled(after time: Date) -> Bool {
        guard let stage = speakingStage else {
            return entries.contains { $0.sample.stream == nil && $0.sample.playPosition != nil && $0.time >= time }
        }
        return entries.filter { $0.sample.stage == stage && $0.sample.stream != nil }.allSatisfy { $0.time >= time }
    }

    /// The stats stage whose streams give the position: the outermost that has reported them.
    private var speakingStage: String? {
        let reporting = entries.filter { $0.sample.stream != nil }.map(\.sample.stage)
        return measuringStages.last(where: reporting.contains) ?? reporting.first
    }

    /// The media position: the furthest stream of the outermost stats stage that has
    /// reported streams (as the status line shows it); without one, what a stage
    /// playing out on its own clock (a delay) says it plays.
    var position: Double? {
        guard let stage = speakingStage else {
            return entries.lazy.compactMap { $0.sample.stream == nil ? $0.sample.figures[StatsFigure.position] : nil }.first
        }
        return entries.filter { $0.sample.stage == stage }.compactMap(\.sample.playPosition).max()
    }
}

/// The alarms an `alarms` stage raised and has not cleared, as `GET /alarms` lists them.
struct AlarmBook: Sendable {
    struct Alarm: Sendable, Encodable {
        /// Set as it is listed, for one of several pipelines.
        var pipeline: String?
        let stage: String
        let stream: String?
        let kind: String
        let value: Double?
        let threshold: Double?
        /// Where the fault began: on the wall clock (ISO 8601) and in the stream (s).
        let since: String?
        let sinceSeconds: Double?

        func of(pipeline: String) -> Alarm {
            var listed = self
            listed.pipeline = pipeline
            return listed
        }

        enum CodingKeys: String, CodingKey {
            case pipeline, stage, stream, kind, value, threshold, since
            case sinceSeconds = "since_s"
        }
    }

    private(set) var active: [Alarm] = []
    private(set) var raisedTotal = 0

    mutating func add(_ event: StageEvent) {
        guard let (kind, raised) = event.alarm else { return }
        let stream = event.stream?.rawValue
        active.removeAll { $0.stage == event.stage && $0.stream == stream && $0.kind == kind }
        guard raised else { return }
        raisedTotal += 1
        active.append(Alarm(pipeline: nil, stage: event.stage, stream: stream, kind: kind, value: event.fields["value"],
                            threshold: event.fields["threshold"], since: event.labels["since"], sinceSeconds: event.fields["since_s"]))
    }
}
