import Foundation
import PipelineConfig
import Synchronization

/// Where a plan's components report: made with the plan, before any runner, so each
/// component is made once and whatever it says reaches the runner that runs it.
/// Events wait in the stream until the runner reads them; connection changes
/// likewise (a sink may lose its connection before the runner looks).
public final class RunChannel: Sendable {
    public let pipeline: String
    public let events: AsyncStream<RunEvent>
    public let emitter: EventEmitter
    public let masker: SecretMasker
    /// How many sinks of the plan publish, those left out at the start not counted (`ComponentContext.destinations`).
    let destinations = Atomic<Int>(0)
    /// Shared by the plan's source and its time-shifting stage (`ComponentContext.playoutHold`).
    let playoutHold = PlayoutHold()
    /// Each change with the key path of the component that holds the connection (`sinks[1]`).
    let connectionChanges: AsyncStream<(keyPath: String, change: ConnectionChange)>
    private let eventSink: AsyncStream<RunEvent>.Continuation
    private let connectionSink: AsyncStream<(keyPath: String, change: ConnectionChange)>.Continuation

    public init(pipeline: String, secrets: [Secret]) {
        self.pipeline = pipeline
        let masker = SecretMasker(secrets: secrets)
        self.masker = masker
        let (events, eventSink) = AsyncStream.makeStream(of: RunEvent.self, bufferingPolicy: .unbounded)
        self.events = events
        self.eventSink = eventSink
        emitter = EventEmitter(pipeline: pipeline, masker: masker) { eventSink.yield($0) }
        (connectionChanges, connectionSink) = AsyncStream.makeStream(of: (keyPath: String, change: ConnectionChange).self,
                                                                     bufferingPolicy: .unbounded)
    }

    /// A component's live connection changed (see `ComponentContext.connection`).
    func connection(_ change: ConnectionChange, from keyPath: String) {
        connectionSink.yield((keyPath, change))
    }

    /// The run is over: no more events.
    public func finish() {
        eventSink.finish()
        connectionSink.finish()
    }
}
