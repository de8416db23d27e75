import GstKit

/// A run's whole state, and the one function that moves it: `reduce(model, input)` gives
/// the next model and what the driver must do (`RunEffect`), touching no GStreamer, so
/// every transition is a row in a table test. Swapping, stopping and finishing are
/// phases, not flags: a stop asked for during a swap is the swap's own `then`.
public struct RunModel: Sendable, Equatable {
    public enum Outcome: Sendable, Equatable {
        /// Every stream reached its end.
        case completed
        /// Stopped on request after draining.
        case stopped
        case failed(String)

        var isFailure: Bool { if case .failed = self { true } else { false } }
    }

    /// What the running pipeline is doing, as people are told it.
    public enum Activity: Sendable, Equatable {
        case connecting, playing, paused, buffering, reconnecting

        var state: RunState {
            switch self {
            case .connecting: .connecting
            case .playing: .playing
            case .paused: .paused
            case .buffering: .buffering
            case .reconnecting: .reconnecting
            }
        }
    }

    public enum AfterSwap: Sendable, Equatable { case goOn, stop }

    public enum Phase: Sendable, Equatable {
        case idle
        /// Fetching what the source needs, building, checking the sinks' far ends.
        case starting
        /// Built and set playing (or on its way there).
        case running(Activity)
        /// New parts going in; `wasPaused` is paused again after, `then` says whether to stop after.
        case swapping(Activity, wasPaused: Bool, then: AfterSwap)
        /// End-of-stream sent to the source; waiting for it to reach the sinks.
        case stopping
        /// GStreamer refused PLAYING; waiting briefly for the bus to say why.
        case refused
        /// The pipeline is down; the sinks are saying what they did.
        case finishing(Outcome, announce: Bool, shown: RunState)
        case finished(Outcome)
    }

    /// What the media turned out to be, learnt as it starts and first plays.
    public enum Media: Sendable, Equatable {
        /// `live`: no preroll (a capture, a live test signal): buffering never pauses it.
        case notYetPlayed(live: Bool)
        /// `knownEnd`: it had a duration when it first played (a file, a VOD playlist).
        case played(live: Bool, knownEnd: Bool)

        /// The pipeline has reached PLAYING once.
        var hasPlayed: Bool {
            if case .played = self { true } else { false }
        }

        var isLive: Bool {
            switch self {
            case .notYetPlayed(let live), .played(let live, _): live
            }
        }
    }

    /// What the built graph holds, as far as the run's behaviour depends on it.
    public struct Layout: Sendable, Equatable {
        /// Every sink's key path.
        public var sinks: [String]
        /// The key paths of sinks that publish (`SinkComponent.isDestination`).
        public var destinations: [String]
        /// Where each of them publishes, by key path (`SinkComponent.destinationName`).
        public var destinationNames: [String: String] = [:]
        /// A stage can hold its own play-out (a time-shift): pausing holds it, and the source still takes media in.
        public var holdsPlayout: Bool
        /// A stage plays out on its own clock (a time-shift): buffering before it only fills it.
        public var playsOutOnItsOwnClock: Bool

        public init(sinks: [String], destinations: [String] = [], holdsPlayout: Bool = false, playsOutOnItsOwnClock: Bool = false) {
            self.sinks = sinks
            self.destinations = destinations
            self.holdsPlayout = holdsPlayout
            self.playsOutOnItsOwnClock = playsOutOnItsOwnClock
        }
    }

    public struct LostSink: Sendable, Equatable {
        public var keyPath: String
        public var reason: String

        public init(keyPath: String, reason: String) {
            self.keyPath = keyPath
            self.reason = reason
        }
    }

    public internal(set) var phase: Phase = .idle
    public internal(set) var media: Media = .notYetPlayed(live: false)
    public internal(set) var layout = Layout(sinks: [])
    /// Sinks that failed while others went on: the run ends failed, naming them, whenever it ends.
    public internal(set) var lostSinks: [LostSink] = []
    /// The decoder decodebin said is missing: the error that follows is told in these words.
    public internal(set) var missingDecoder: String?
    /// Elements swapped out: what they say while going away is not about the run.
    public internal(set) var retired: Set<String> = []
    /// Destinations whose far end has had the stream: a broadcast is playing once one has,
    /// not when its own pipeline plays.
    public internal(set) var reachedDestinations: Set<String> = []
    /// Destinations whose far end has the stream now: one of several reconnecting leaves the
    /// run playing while another has it.
    public internal(set) var upDestinations: Set<String> = []
    /// Parts other than destinations (a source) reconnecting now: a destination coming up does
    /// not end their reconnect.
    public internal(set) var reconnectingParts: Set<String> = []

    /// A run with destinations none of which has connected yet.
    var awaitsDestination: Bool { !layout.destinations.isEmpty && reachedDestinations.isEmpty }

    /// How long end-of-stream has to reach the sinks on a stop.
    public let drainTimeout: Duration

    public init(drainTimeout: Duration = .seconds(10)) {
        self.drainTimeout = drainTimeout
    }

    /// What people are told the run is doing.
    public var state: RunState {
        switch phase {
        case .idle: .initialising
        case .starting, .refused: .connecting
        case .running(let activity), .swapping(let activity, _, _): activity.state
        case .stopping: .stopping
        case .finishing(_, _, let shown): shown
        case .finished(let outcome): outcome.isFailure ? .failed : .stopped
        }
    }

    /// The outcome, once known (the sinks may still be finishing).
    public var outcome: Outcome? {
        switch phase {
        case .finishing(let outcome, _, _), .finished(let outcome): outcome
        default: nil
        }
    }

    /// The one transition function.
    public static func reduce(_ model: RunModel, _ input: RunInput) -> (RunModel, [RunEffect]) {
        var next = model
        var effects: [RunEffect] = []
        next.take(input, into: &effects)
        return (next, effects)
    }
}

/// What moves a run: the bus's messages (named by the driver after the file's parts) and
/// the driver's own requests and timers.
public enum RunInput: Sendable, Equatable {
    // Asked for.
    case start
    case stop
    case abort
    case pause
    case resume
    /// The graph is built and about to be set playing; `leftOut`: sinks left out of it, their far end failing its check.
    case built(RunModel.Layout, leftOut: [RunModel.LostSink] = [])
    /// Building it, or a sink's check of its far end, failed (`text` is the reason).
    case buildFailed(String)
    /// Setting it PLAYING: what GStreamer answered.
    case playRequested(StateChangeResult)
    /// New parts are being made beside the running ones.
    case swapBegan
    /// They go in now, and the elements named go out.
    case swapApplying(retiring: Set<String>)
    case swapEnded(RunModel.Layout)
    // Timers the driver started (`RunEffect.startTimer`).
    case timerFired(RunTimer)
    case connection(keyPath: String, ConnectionChange)
    /// The sinks said what they did (`RunEffect.finishSinks`), in the plan's order.
    case sinksFinished([SinkReport])
    // From the bus.
    case error(source: String, owner: String, text: String, hint: String?, cause: ErrorCause)
    case warning(source: String, owner: String, text: String)
    case missingDecoder(String)
    case latency
    case endOfStream
    /// The pipeline itself reached PLAYING; whether it knows its duration then.
    case pipelinePlaying(hasKnownEnd: Bool)
    case buffering(percent: Int)

    public struct SinkReport: Sendable, Equatable {
        public var keyPath: String
        public var verdict: SinkVerdict
        public init(keyPath: String, verdict: SinkVerdict) {
            self.keyPath = keyPath
            self.verdict = verdict
        }
    }
}

public enum RunTimer: Sendable, Equatable {
    /// End-of-stream has had its time to reach the sinks.
    case drain
    /// GStreamer refused PLAYING and the bus has had its time to say why.
    case refusal
}

/// What the driver does for a transition, in order.
public enum RunEffect: Sendable, Equatable {
    case announce(from: RunState, to: RunState)
    case notice(String)
    case warning(String)
    case failure(String)
    case buffering(percent: Int)
    case endOfStream
    case setPipelineState(ElementState)
    /// Holds (or lets go) the play-out of the stages that can hold it.
    case holdPlayout(Bool)
    case recalculateLatency
    /// What the sinks that render at the clock would still play is let go: a stop ends them now.
    case cutPlayout
    /// Tells the source the run stops; `sendEndOfStream` when the pipeline must end its streams.
    case stopSource(sendEndOfStream: Bool)
    /// Cancels the source's preparation (a playlist fetch, a wait for a stream to go live).
    case cancelPreparation
    case startTimer(RunTimer)
    /// Sets the pipeline to NULL, cancels the driver's tasks and asks each sink what it did.
    case finishSinks(completed: Bool)
    /// The run is over: events end, waiters are answered.
    case close(RunModel.Outcome)
}
