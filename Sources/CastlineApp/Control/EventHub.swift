import CastlineKit
import Foundation
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
        var figures = LatestFigures()
    }

    private let state = Mutex(State())

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
}

/// The latest figures a run reported: every stats stage's last sample per
/// stream, and the delay stage's delay and history.
struct LatestFigures: Sendable {
    struct Entry: Sendable {
        var time: Date
        var sample: StatsSample
    }

    /// Samples by stage and stream, in the order they first came.
    private(set) var entries: [Entry] = []
    /// How far behind live playback is, and how much delay is held, in seconds.
    private(set) var delay: Double?
    private(set) var availableDelay: Double?

    mutating func add(_ event: RunEvent) {
        switch event.kind {
        case .stats(let sample):
            if let index = entries.firstIndex(where: { $0.sample.stage == sample.stage && $0.sample.stream == sample.stream }) {
                entries[index] = Entry(time: event.time, sample: sample)
            } else {
                entries.append(Entry(time: event.time, sample: sample))
            }
            if let seconds = sample.figures[StatsFigure.delaySeconds] { delay = seconds }
            if let seconds = sample.figures[StatsFigure.availableDelaySeconds] { availableDelay = seconds }
        case .delayChanged(_, let applied, let available):
            delay = applied.seconds
            availableDelay = available.seconds
        case .availableDelayChanged(let available):
            availableDelay = available.seconds
        case .reloaded:
            // Stages may have gone or been renamed: only figures from the new pipeline count.
            entries.removeAll()
        default:
            break
        }
    }

    /// The media position: the furthest stream of the first stats stage that
    /// reported streams (as the status line shows it).
    var position: Double? {
        guard let stage = entries.first(where: { $0.sample.stream != nil })?.sample.stage else { return nil }
        return entries.filter { $0.sample.stage == stage }.compactMap { $0.sample.figures[StatsFigure.position] }.max()
    }

    /// Each latest sample as a JSON object: `ts`, `stage`, `stream` and its figures
    /// (the keys of a `stats` JSON line, without `event` and `pipeline`).
    var samples: [[String: Any]] {
        entries.map { entry in
            var object = EventJSON.fields(of: .stats(entry.sample))
            object["ts"] = EventJSON.timestamp(entry.time)
            return object
        }
    }
}
