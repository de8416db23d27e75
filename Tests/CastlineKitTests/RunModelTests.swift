import CastlineKit
import GstKit
import Testing

/// The run's transitions as a table: inputs in, the phase reached and the last input's effects out.
@Suite("RunModel: every transition of a run, without GStreamer")
struct RunModelTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let name: String
        /// Fed in order; the effects checked are the last one's.
        let inputs: [RunInput]
        let phase: RunModel.Phase
        let effects: [RunEffect]
        var testDescription: String { name }
    }

    static let one = RunModel.Layout(sinks: ["sinks[0]"])
    static let two = RunModel.Layout(sinks: ["sinks[0]", "sinks[1]"])
    /// A publish with a recording beside it.
    static let broadcast = RunModel.Layout(sinks: ["sinks[0]", "sinks[1]"], destinations: ["sinks[0]"])
    static let delayed = RunModel.Layout(sinks: ["sinks[0]"], holdsPlayout: true, playsOutOnItsOwnClock: true)
    static let playing: [RunInput] = [.start, .built(one), .playRequested(.async), .pipelinePlaying(hasKnownEnd: true)]
    static let unboundedPlaying: [RunInput] = [.start, .built(one), .playRequested(.async), .pipelinePlaying(hasKnownEnd: false)]
    static let livePlaying: [RunInput] = [.start, .built(one), .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false)]
    static let stopNotice = RunEffect.notice("stopping: sending end-of-stream so outputs are complete")
    static let stopping: [RunEffect] = [
        .announce(from: .playing, to: .stopping), stopNotice, .cutPlayout, .stopSource(sendEndOfStream: true), .startTimer(.drain),
    ]

    static let rows: [Row] = [
        Row(name: "start announces connecting", inputs: [.start],
            phase: .starting, effects: [.announce(from: .initialising, to: .connecting)]),
        Row(name: "first PLAYING announces playing", inputs: playing,
            phase: .running(.playing), effects: [.announce(from: .connecting, to: .playing)]),
        Row(name: "a second start does nothing", inputs: playing + [.start], phase: .running(.playing), effects: []),
        Row(name: "a build that fails ends the run failed, unannounced", inputs: [.start, .buildFailed("no such file")],
            phase: .finishing(.failed("no such file"), announce: false, shown: .connecting), effects: [.finishSinks(completed: false)]),
        Row(name: "a stop while starting cancels the preparation and ends at once", inputs: [.start, .stop],
            phase: .finishing(.stopped, announce: true, shown: .connecting),
            effects: [.cancelPreparation, .stopSource(sendEndOfStream: false), .finishSinks(completed: true)]),
        Row(name: "a stop while playing sends end-of-stream and starts the drain timer", inputs: playing + [.stop],
            phase: .stopping, effects: stopping),
        Row(name: "a second stop does nothing", inputs: playing + [.stop, .stop], phase: .stopping, effects: []),
        Row(name: "end-of-stream while stopping: stopped", inputs: playing + [.stop, .endOfStream],
            phase: .finishing(.stopped, announce: true, shown: .stopping), effects: [.endOfStream, .finishSinks(completed: true)]),
        Row(name: "end-of-stream unasked: completed", inputs: playing + [.endOfStream],
            phase: .finishing(.completed, announce: true, shown: .playing), effects: [.endOfStream, .finishSinks(completed: true)]),
        Row(name: "the sinks' notes come before the final state, then the run closes",
            inputs: playing + [.stop, .endOfStream, .sinksFinished([.init(keyPath: "sinks[0]", verdict: .done("recorded 5 s"))])],
            phase: .finished(.stopped),
            effects: [.notice("recorded 5 s"), .announce(from: .stopping, to: .stopped), .close(.stopped)]),
        Row(name: "a sink that reached nothing fails a run that ended cleanly",
            inputs: playing + [.endOfStream, .sinksFinished([.init(keyPath: "sinks[0]", verdict: .failed("never connected"))])],
            phase: .finished(.failed("never connected")),
            effects: [.failure("never connected"), .announce(from: .playing, to: .failed), .close(.failed("never connected"))]),
        Row(name: "the drain timer fails a stop whose end never arrived", inputs: playing + [.stop, .timerFired(.drain)],
            phase: .finishing(.failed("end-of-stream did not reach the outputs within 10s; outputs may be incomplete"),
                              announce: true, shown: .stopping),
            effects: [.finishSinks(completed: false)]),
        Row(name: "a drain timer after the end does nothing", inputs: playing + [.endOfStream, .timerFired(.drain)],
            phase: .finishing(.completed, announce: true, shown: .playing), effects: []),
        Row(name: "pause pauses the pipeline", inputs: playing + [.pause],
            phase: .running(.paused), effects: [.setPipelineState(.paused), .announce(from: .playing, to: .paused)]),
        Row(name: "pause with a delay holds its play-out only",
            inputs: [.start, .built(delayed), .playRequested(.async), .pipelinePlaying(hasKnownEnd: false), .pause],
            phase: .running(.paused), effects: [.holdPlayout(true), .announce(from: .playing, to: .paused)]),
        Row(name: "a stop while paused lets the play-out go first",
            inputs: [.start, .built(delayed), .playRequested(.async), .pipelinePlaying(hasKnownEnd: false), .pause, .stop],
            phase: .stopping,
            effects: [.holdPlayout(false), .announce(from: .paused, to: .stopping), stopNotice,
                      .cutPlayout, .stopSource(sendEndOfStream: true), .startTimer(.drain)]),
        Row(name: "resume", inputs: playing + [.pause, .resume],
            phase: .running(.playing), effects: [.setPipelineState(.playing), .announce(from: .paused, to: .playing)]),
        Row(name: "resume when not paused does nothing", inputs: playing + [.resume], phase: .running(.playing), effects: []),
        Row(name: "a stop during a swap waits for it", inputs: playing + [.swapBegan, .stop],
            phase: .swapping(.playing, wasPaused: false, then: .stop), effects: []),
        Row(name: "the swap's end carries out the stop asked for during it",
            inputs: playing + [.swapBegan, .stop, .swapApplying(retiring: ["old"]), .swapEnded(one)],
            phase: .stopping, effects: stopping),
        Row(name: "a paused swap plays while the parts change", inputs: playing + [.pause, .swapBegan, .swapApplying(retiring: [])],
            phase: .swapping(.playing, wasPaused: true, then: .goOn),
            effects: [.setPipelineState(.playing), .announce(from: .paused, to: .playing)]),
        Row(name: "and is paused again after",
            inputs: playing + [.pause, .swapBegan, .swapApplying(retiring: []), .swapEnded(one)],
            phase: .running(.paused), effects: [.setPipelineState(.paused), .announce(from: .playing, to: .paused)]),
        Row(name: "what a retired element says is not about the run",
            inputs: playing + [.swapBegan, .swapApplying(retiring: ["old"]),
                               .error(source: "old", owner: "source (old)", text: "gone", hint: nil, cause: .other)],
            phase: .swapping(.playing, wasPaused: false, then: .goOn), effects: []),
        Row(name: "an error names the part and GStreamer's hint",
            inputs: playing + [.error(source: "filesink0", owner: "sinks[0] (filesink0)", text: "Could not open", hint: "No such directory", cause: .other)],
            phase: .finishing(.failed("sinks[0] (filesink0): Could not open (No such directory)"), announce: true, shown: .playing),
            effects: [.finishSinks(completed: false)]),
        Row(name: "a full disk is said in castline's words",
            inputs: playing + [.error(source: "filesink0", owner: "sinks[0] (filesink0)", text: "Error", hint: nil, cause: .diskFull)],
            phase: .finishing(.failed("sinks[0] (filesink0): the disk is full (free some space, or write to another disk)"),
                              announce: true, shown: .playing),
            effects: [.finishSinks(completed: false)]),
        Row(name: "a missing decoder is what the error is about",
            inputs: playing + [.missingDecoder("no decoder for opus"),
                               .error(source: "decodebin0", owner: "source (decodebin0)", text: "Internal data stream error", hint: nil, cause: .other)],
            phase: .finishing(.failed("source (decodebin0): no decoder for opus"), announce: true, shown: .playing),
            effects: [.finishSinks(completed: false)]),
        Row(name: "a warning is passed on, named", inputs: playing + [.warning(source: "x", owner: "source (x)", text: "late")],
            phase: .running(.playing), effects: [.warning("source (x): late")]),
        Row(name: "a refused PLAYING waits for the bus to say why", inputs: [.start, .built(one), .playRequested(.failure)],
            phase: .refused, effects: [.startTimer(.refusal)]),
        Row(name: "and ends with its words, unannounced",
            inputs: [.start, .built(one), .playRequested(.failure),
                     .error(source: "alsasrc0", owner: "source (alsasrc0)", text: "busy", hint: nil, cause: .busy)],
            phase: .finishing(.failed("source (alsasrc0): busy"), announce: false, shown: .connecting),
            effects: [.finishSinks(completed: false)]),
        Row(name: "or in general words when it says nothing",
            inputs: [.start, .built(one), .playRequested(.failure), .timerFired(.refusal)],
            phase: .finishing(.failed("the pipeline could not start"), announce: false, shown: .connecting),
            effects: [.finishSinks(completed: false)]),
        Row(name: "a file waits for its whole buffer before it first plays",
            inputs: [.start, .built(one), .playRequested(.async), .buffering(percent: 40)],
            phase: .running(.buffering),
            effects: [.buffering(percent: 40), .setPipelineState(.paused), .announce(from: .connecting, to: .buffering)]),
        Row(name: "and goes on at 100 %",
            inputs: [.start, .built(one), .playRequested(.async), .buffering(percent: 40), .buffering(percent: 100)],
            phase: .running(.buffering), effects: [.buffering(percent: 100), .setPipelineState(.playing)]),
        Row(name: "once played, a file pauses only when its buffer runs dry",
            inputs: playing + [.buffering(percent: 20)], phase: .running(.playing), effects: [.buffering(percent: 20)]),
        Row(name: "an unbounded stream once played is not buffering: its live edge holds it back",
            inputs: [.start, .built(one), .playRequested(.async), .pipelinePlaying(hasKnownEnd: false), .buffering(percent: 0)],
            phase: .running(.playing), effects: []),
        Row(name: "a source whose buffer ran dry stalls the run: held, shown buffering",
            inputs: unboundedPlaying + [.connection(keyPath: "source", .stalled)], phase: .running(.buffering),
            effects: [.buffering(percent: 0), .setPipelineState(.paused), .announce(from: .playing, to: .buffering)]),
        Row(name: "and plays on when it holds enough, shown playing once the pipeline plays",
            inputs: unboundedPlaying + [.connection(keyPath: "source", .stalled), .connection(keyPath: "source", .buffered)],
            phase: .running(.buffering), effects: [.buffering(percent: 100), .setPipelineState(.playing)]),
        Row(name: "playing again",
            inputs: unboundedPlaying + [.connection(keyPath: "source", .stalled), .connection(keyPath: "source", .buffered),
                                        .pipelinePlaying(hasKnownEnd: false)],
            phase: .running(.playing), effects: [.announce(from: .buffering, to: .playing)]),
        Row(name: "a stall is not a pause: the user's pause stands, and a stop is not held",
            inputs: unboundedPlaying + [.pause, .connection(keyPath: "source", .stalled)], phase: .running(.paused), effects: []),
        Row(name: "a stop while stalled plays the pipeline so the end reaches the outputs",
            inputs: unboundedPlaying + [.connection(keyPath: "source", .stalled), .stop], phase: .stopping,
            effects: [.setPipelineState(.playing), .announce(from: .buffering, to: .stopping), stopNotice,
                      .cutPlayout, .stopSource(sendEndOfStream: true), .startTimer(.drain)]),
        Row(name: "a stalled source reconnecting is not held: the pipeline plays (the source says again that it is dry once back)",
            inputs: unboundedPlaying + [.connection(keyPath: "source", .stalled),
                                        .connection(keyPath: "source", .reconnecting(reason: "reset", attempt: 1, delay: .seconds(1)))],
            phase: .running(.reconnecting),
            effects: [.setPipelineState(.playing), .announce(from: .buffering, to: .reconnecting),
                      .warning("connection lost (reset); reconnecting in 1.0 s (attempt 1)")]),
        Row(name: "buffered during a swap plays the pipeline, so a swap that fails does not return to a held one",
            inputs: unboundedPlaying + [.connection(keyPath: "source", .stalled), .swapBegan, .connection(keyPath: "source", .buffered)],
            phase: .swapping(.playing, wasPaused: false, then: .goOn), effects: [.buffering(percent: 100), .setPipelineState(.playing)]),
        Row(name: "a stage with its own play-out clock is not stalled by its source",
            inputs: [.start, .built(delayed), .playRequested(.async), .pipelinePlaying(hasKnownEnd: false),
                     .connection(keyPath: "source", .stalled)], phase: .running(.playing), effects: []),
        Row(name: "a live source never pauses for its buffer",
            inputs: [.start, .built(one), .playRequested(.noPreroll), .buffering(percent: 10)],
            phase: .running(.connecting), effects: [.buffering(percent: 10)]),
        Row(name: "a stage with its own play-out clock hides the source's buffering",
            inputs: [.start, .built(delayed), .playRequested(.async), .buffering(percent: 10)],
            phase: .running(.connecting), effects: []),
        Row(name: "latency is recalculated off the streaming thread", inputs: livePlaying + [.latency],
            phase: .running(.playing), effects: [.recalculateLatency]),
        Row(name: "a lost connection is reconnecting",
            inputs: livePlaying + [.connection(keyPath: "sinks[0]", .reconnecting(reason: "reset", attempt: 1, delay: .seconds(2)))],
            phase: .running(.reconnecting),
            effects: [.announce(from: .playing, to: .reconnecting), .warning("connection lost (reset); reconnecting in 2.0 s (attempt 1)")]),
        Row(name: "and playing once back",
            inputs: livePlaying + [.connection(keyPath: "sinks[0]", .reconnecting(reason: "reset", attempt: 1, delay: .seconds(2))),
                                   .connection(keyPath: "sinks[0]", .reconnected(attempts: 1))],
            phase: .running(.playing),
            effects: [.notice("reconnected after 1 attempt"), .announce(from: .reconnecting, to: .playing)]),
        Row(name: "one sink of two lost: the other goes on",
            inputs: [.start, .built(two), .playRequested(.noPreroll), .connection(keyPath: "sinks[1]", .failed("key refused"))],
            phase: .running(.connecting), effects: [.warning("sinks[1]: key refused; the other sink goes on")]),
        Row(name: "and the run ends failed, naming it, however it ends",
            inputs: [.start, .built(two), .playRequested(.noPreroll), .connection(keyPath: "sinks[1]", .failed("key refused")),
                     .stop, .endOfStream],
            phase: .finishing(.failed("sinks[1]: key refused"), announce: true, shown: .stopping),
            effects: [.endOfStream, .finishSinks(completed: false)]),
        Row(name: "the last sink lost ends the run",
            inputs: livePlaying + [.connection(keyPath: "sinks[0]", .failed("out of retries"))],
            phase: .finishing(.failed("out of retries"), announce: true, shown: .playing), effects: [.finishSinks(completed: false)]),
        Row(name: "a broadcast is not playing while no destination has the stream",
            inputs: [.start, .built(broadcast), .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false)],
            phase: .running(.connecting), effects: []),
        Row(name: "it is once one has",
            inputs: [.start, .built(broadcast), .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false),
                     .connection(keyPath: "sinks[0]", .connected)],
            phase: .running(.playing), effects: [.announce(from: .connecting, to: .playing)]),
        Row(name: "the last destination lost ends the run, draining the recording beside it",
            inputs: [.start, .built(broadcast), .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false),
                     .connection(keyPath: "sinks[0]", .connected), .connection(keyPath: "sinks[0]", .failed("out of retries"))],
            phase: .stopping,
            effects: [.warning("sinks[0]: out of retries; no destination is left, so the run ends")] + stopping),
        Row(name: "and fails, naming it",
            inputs: [.start, .built(broadcast), .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false),
                     .connection(keyPath: "sinks[0]", .connected), .connection(keyPath: "sinks[0]", .failed("out of retries")),
                     .endOfStream],
            phase: .finishing(.failed("sinks[0]: out of retries"), announce: true, shown: .stopping),
            effects: [.endOfStream, .finishSinks(completed: false)]),
        Row(name: "a destination left out at the start is named, and the others go on",
            inputs: [.start, .built(broadcast, leftOut: [.init(keyPath: "sinks[2]", reason: "cannot resolve x")])],
            phase: .running(.connecting),
            effects: [.warning("sinks[2]: cannot resolve x; the other 2 sinks go on")]),
        Row(name: "one destination of several reconnecting is named, and the run plays on while another has the stream",
            inputs: [.start, .built(RunModel.Layout(sinks: ["sinks[0]", "sinks[1]"], destinations: ["sinks[0]", "sinks[1]"])),
                     .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false), .connection(keyPath: "sinks[0]", .connected),
                     .connection(keyPath: "sinks[1]", .reconnecting(reason: "reset", attempt: 1, delay: .seconds(2)))],
            phase: .running(.playing), effects: [.warning("sinks[1]: connection lost (reset); reconnecting in 2.0 s (attempt 1)")]),
        Row(name: "a destination that cannot connect yet leaves the run connecting; another taking the stream makes it play",
            inputs: [.start, .built(RunModel.Layout(sinks: ["sinks[0]", "sinks[1]"], destinations: ["sinks[0]", "sinks[1]"])),
                     .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false),
                     .connection(keyPath: "sinks[1]", .reconnecting(reason: "refused", attempt: 1, delay: .seconds(1))),
                     .connection(keyPath: "sinks[0]", .connected)],
            phase: .running(.playing), effects: [.announce(from: .connecting, to: .playing)]),
        Row(name: "buffered while waiting on a destination: connecting again, not buffering for good",
            inputs: [.start, .built(broadcast), .playRequested(.async), .buffering(percent: 10), .buffering(percent: 100),
                     .pipelinePlaying(hasKnownEnd: false)],
            phase: .running(.connecting), effects: [.announce(from: .buffering, to: .connecting)]),
        Row(name: "a destination coming up does not end the source's reconnect",
            inputs: [.start, .built(broadcast), .playRequested(.noPreroll), .pipelinePlaying(hasKnownEnd: false),
                     .connection(keyPath: "source", .reconnecting(reason: "gone", attempt: 1, delay: .seconds(1))),
                     .connection(keyPath: "sinks[0]", .connected)],
            phase: .running(.reconnecting), effects: []),
        Row(name: "abort ends at once", inputs: playing + [.abort],
            phase: .finishing(.failed("stopped at once; outputs may be incomplete"), announce: true, shown: .playing),
            effects: [.finishSinks(completed: false)]),
        Row(name: "nothing moves a finished run",
            inputs: playing + [.endOfStream, .sinksFinished([]), .stop, .pause, .error(source: "a", owner: "a", text: "b", hint: nil, cause: .other)],
            phase: .finished(.completed), effects: []),
    ]

    @Test("transition", arguments: rows)
    func transition(_ row: Row) {
        var model = RunModel()
        var effects: [RunEffect] = []
        for input in row.inputs { (model, effects) = RunModel.reduce(model, input) }
        #expect(model.phase == row.phase)
        #expect(effects == row.effects)
    }

    @Test("the state people see follows the phase")
    func shownState() {
        var model = RunModel()
        var seen: [RunState] = [model.state]
        for input in Self.playing + [.stop, .endOfStream, .sinksFinished([])] {
            model = RunModel.reduce(model, input).0
            if seen.last != model.state { seen.append(model.state) }
        }
        #expect(seen == [.initialising, .connecting, .playing, .stopping, .stopped])
    }
}
