import CastlineKit
@testable import StagePlugins
import Foundation
import GstKit
import StagePlugins
import Synchronization
import TestSupport
import Testing

/// The delay stage in a real pipeline: a test tone beeps on every wall-clock
/// second; the beep's onset is found going into the stage's graph (raw, at the
/// source) and coming out (decoded again, at the sink), both on the pipeline's
/// running time. It must come out `delay` later, within 20 ms.
@Suite("delay stage, real pipeline", .serialized, .timeLimit(.minutes(2)), .noGStreamerCriticals)
struct DelayStagePipelineTests {
    @Test("a beep comes out 3 s after it went in; after +1 it is 4 s, after -2 it is 2 s")
    func markersComeOutDelayLater() async throws {
        let spec = try PipelineLoader(catalog: ComponentRegistry.builtin).load(yaml: """
            version: 1
            name: delay-test
            source:
              test:
                audio: {}
            stages:
              - delay: { initial: 3s, max: 1m }
            sinks:
              - null: { decode: true }
            """, file: "delay-test.yaml")
        let built = try GraphBuilder().build(ComponentRegistry.builtin.plan(spec))
        let delay = try #require(built.plan.stages.first?.component as? DelayStage)
        let going = OnsetDetector(), coming = OnsetDetector()
        let source = try #require(built.pipeline.element(named: "source-test")?.staticPad("audio"))
        let sink = try #require(built.pipeline.element(named: "sink-null0")?.staticPad("audio"))
        source.addProbe(.buffer) { info in going.scan(info); return .ok }
        sink.addProbe(.buffer) { info in coming.scan(info); return .ok }
        built.pipeline.setState(.playing)
        defer { built.pipeline.setState(.null) }

        /// The lag of beeps that came out after `since` (running time), matched to the beep that went in `expected` earlier.
        func lags(expected: Double, since: Double, count: Int) async throws -> [Double] {
            let deadline = ContinuousClock.now + .seconds(15)
            while coming.onsets.filter({ $0 > since }).count < count, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            let inputs = going.onsets
            return coming.onsets.filter { $0 > since }.prefix(count).map { out in
                let source = inputs.min { abs(out - expected - $0) < abs(out - expected - $1) } ?? .infinity
                return out - source
            }
        }

        // The first beep out may be cut in half by the start of play-out: it is left out.
        let first = try await lags(expected: 3, since: 0, count: 3).dropFirst()
        var now = built.pipeline.runningTime?.seconds ?? 0
        // A move goes on after what has gone out (up to a unit's length more than asked), and
        // says the delay it applied: that is the lag.
        let back = delay.perform("delay", .step(1))?.fields["applied_s"] ?? -1
        // The jump back replays what came out in the last second; beeps from then on lag 4 s.
        let later = try await lags(expected: back, since: now + 1.5, count: 2)
        now = built.pipeline.runningTime?.seconds ?? 0
        let nearer0 = delay.perform("delay", .step(-2))?.fields["applied_s"] ?? -1
        let nearer = try await lags(expected: nearer0, since: now + 0.5, count: 2)
        for (asked, applied) in [(4.0, back), (2.0, nearer0)] {
            #expect(applied >= asked && applied < asked + 0.05, "asked \(asked) s, applied \(applied) s")
        }
        // Asked for 0, play-out goes on after what has already gone out (`lead` ahead): that is
        // the delay applied, and said. A beep then lags by it and by the encoder's hold (its
        // sound itself goes out on time: the encode stage sends AAC frames the encoder's delay
        // earlier, so every other lag is the delay alone).
        now = built.pipeline.runningTime?.seconds ?? 0
        let zero = delay.perform("delay", .set(0))?.fields["applied_s"] ?? -1
        // What went out is `lead` (0.2 s) ahead, and the newest held lags the clock by the source's buffer.
        #expect(zero > 0 && zero <= 0.45, "delay 0 applied as \(zero) s")
        let immediate = try await lags(expected: zero, since: now + 0.5, count: 2)
        try #require(immediate.count == 2, "no beeps at delay 0")
        #expect(immediate.allSatisfy { $0 >= zero && $0 < zero + 0.1 }, "at delay 0 (\(zero) s applied) beeps lagged \(immediate)")
        print("delay stage lags (s): 3 s \(Array(first)), 4 s \(later), 2 s \(nearer); at 0 s \(immediate)")
        for (expected, measured) in [(3.0, Array(first)), (back, later), (nearer0, nearer)] {
            #expect(measured.count == 2, "delay \(expected): beeps out \(measured)")
            for lag in measured {
                #expect(abs(lag - expected) < 0.01, "delay \(expected) s applied: a beep lagged \(lag) s")
            }
        }
    }
}

extension DelayStagePipelineTests {
    @Test("the sinks after the time-shift still wait out what holds media back before it (a 300 ms jitter buffer; WebRTC's is 200 ms): the delay adds to the undelayed play's latency, it does not take that in")
    func upstreamLatencyIsKept() async throws {
        func latency(delay: Bool) async throws -> Double {
            let built = try GraphBuilder().build(ComponentRegistry.builtin.plan(try PipelineLoader(catalog: ComponentRegistry.builtin).load(yaml: """
                version: 1
                source: { test: { audio: {} } }
                stages:
                  - gst: "rtpL16pay ! rtpjitterbuffer latency=300 ! rtpL16depay"
                \(delay ? "  - delay: { initial: 1s, max: 10s }" : "")
                sinks: [ { null: { decode: true } } ]
                """, file: "latency.yaml")))
            built.pipeline.setState(.playing)
            defer { built.pipeline.setState(.null) }
            // Configured once the sink has had media (its query is answered only then).
            _ = await waitUntil(.seconds(5)) { () async in (built.pipeline.queryLatency()?.min.seconds ?? 0) >= 0.3 }
            return built.pipeline.queryLatency()?.min.seconds ?? 0
        }
        let undelayed = try await latency(delay: false), delayed = try await latency(delay: true)
        #expect(undelayed >= 0.3 && undelayed < 0.35, "undelayed: \(undelayed) s")
        #expect(abs(delayed - undelayed) < 0.001, "the pipeline's latency with a delay stage \(delayed) s, without \(undelayed) s")
    }

    @Test("a value set again changes nothing (the keyframe it resumed from made the delay differ); a step nearer live at 0 stays at 0")
    func repeatedRequests() async throws {
        let spec = try PipelineLoader(catalog: ComponentRegistry.builtin).load(yaml: """
            version: 1
            name: delay-repeat
            source: { test: { video: { width: 160, height: 120, fps: 30 }, audio: {} } }
            stages:
              - encode: { video: { keyframe-interval: 2s } }
              - delay: { initial: 3s, max: 1m }
            sinks: [ { null: {} } ]
            """, file: "delay-repeat.yaml")
        let built = try GraphBuilder().build(ComponentRegistry.builtin.plan(spec))
        let delay = try #require(built.plan.stages.last?.component as? DelayStage)
        built.pipeline.setState(.playing)
        defer { built.pipeline.setState(.null) }
        func applied(_ adjustment: StageAdjustment) -> Double? { delay.perform("delay", adjustment)?.fields["applied_s"] }
        // Playing at 3 s, with history enough for the moves below: 7 s held.
        let available = Mutex(0.0), lastApplied = Mutex<Double?>(nil), events = built.plan.channel.events
        let watching = Task {
            for await event in events {
                guard case .stage(let stage) = event.kind else { continue }
                if let held = stage.fields["available_s"] { available.withLock { $0 = max($0, held) } }
                if let applied = stage.fields["applied_s"] { lastApplied.withLock { $0 = applied } }
            }
        }
        defer { watching.cancel() }
        try #require(await waitUntil(.seconds(30), every: .milliseconds(100)) { available.withLock { $0 } >= 7 }, "7 s of history in 30 s")
        let first = try #require(applied(.set(1.5)))
        let again = [applied(.set(1.5)), applied(.set(1.5)), applied(.set(1.5))]
        #expect(again.allSatisfy { $0 == first }, "set 1.5 s: \(first), then \(again)")
        // A step nearer live moves to the next keyframe past its target, now or as it comes (the
        // GOP is 2 s): once more than a GOP has come, the delay is a second less, or at live.
        let heldAtStep = available.withLock { $0 }
        _ = applied(.step(-1))
        try #require(await waitUntil(.seconds(10), every: .milliseconds(100)) { available.withLock { $0 } >= heldAtStep + 2.2 },
                     "2.2 s more history in 10 s")
        // As the delay says it (not asked again: that would make the move itself).
        let afterStep = try #require(lastApplied.withLock { $0 })
        #expect(afterStep <= max(first - 1, 0.45), "at \(first) s, a step of -1 gave \(afterStep) s a GOP later")
        _ = applied(.set(0))
        let atLive = try #require(applied(.set(0)))
        let stepped = [applied(.step(-1)), applied(.step(-1))]
        #expect(stepped.allSatisfy { $0 == atLive }, "at \(atLive) s, a step nearer live gave \(stepped)")
    }
}

extension DelayStagePipelineTests {
    @Test("a pause of the time-shift is not frames dropped at a stats stage after it (its output's time jumps by the pause)")
    func pauseIsNotDroppedFrames() async throws {
        let spec = try PipelineLoader(catalog: ComponentRegistry.builtin).load(yaml: """
            version: 1
            name: delay-pause
            source: { test: { video: { width: 160, height: 120, fps: 30 } } }
            stages:
              - encode: {}
              - delay: { initial: 1s, max: 1m }
              - stats: { every: 200ms }
            sinks: [ { null: {} } ]
            """, file: "delay-pause.yaml")
        let built = try GraphBuilder().build(ComponentRegistry.builtin.plan(spec))
        let delay = try #require(built.plan.stages.first { $0.component is DelayStage }?.component as? DelayStage)
        let latest = Mutex<(buffers: Double, dropped: Double, delay: Double)>((0, 0, 0)), events = built.plan.channel.events
        let watching = Task {
            for await event in events {
                guard case .stats(let sample) = event.kind else { continue }
                latest.withLock { latest in
                    if sample.stream == .video, let buffers = sample.figures["buffers"] {
                        latest.buffers = buffers
                        latest.dropped = sample.figures["dropped_frames"] ?? -1
                    }
                    if let delay = sample.figures[DelayReport.delay] { latest.delay = delay }
                }
            }
        }
        defer { watching.cancel() }
        built.pipeline.setState(.playing)
        defer { built.pipeline.setState(.null) }
        try #require(await waitUntil(.seconds(15), every: .milliseconds(50)) { latest.withLock { $0.buffers } >= 30 }, "a second played out")
        let delayBefore = latest.withLock { $0.delay }
        delay.pausePlayout()
        // Paused for 2 s by the delay it reports (it grows by the pause).
        try #require(await waitUntil(.seconds(10), every: .milliseconds(50)) { latest.withLock { $0.delay } >= delayBefore + 2 }, "paused 2 s")
        let resumedAt = latest.withLock { $0.buffers }
        _ = delay.resumePlayout()
        try #require(await waitUntil(.seconds(10), every: .milliseconds(50)) { latest.withLock { $0.buffers } >= resumedAt + 30 }, "a second more")
        let dropped = latest.withLock { $0.dropped }
        #expect(dropped == 0, "a 2 s pause read as \(dropped) frames dropped")
    }
}

/// Finds where the beep (0.24 full scale, over a 0.08 tone: the test source's defaults) starts in raw float
/// audio, interleaved or planar, as running time (the pads carry segments from 0).
final class OnsetDetector: Sendable {
    private struct State {
        var onsets: [Double] = []
        var loud = false
        var quietFrames = 0
    }
    private let state = Mutex(State())

    var onsets: [Double] { state.withLock { $0.onsets } }

    func scan(_ info: ProbeInfo) {
        guard let buffer = info.buffer, let pts = buffer.pts?.seconds else { return }
        let caps = info.pad?.currentCaps?.structure(at: 0)
        guard caps?.string("format") == "F32LE" else { return }
        let channels = caps?.int("channels") ?? 2
        let planar = caps?.string("layout") == "non-interleaved"
        _ = buffer.withUnsafeBytes { raw in
            let samples = raw.bindMemory(to: Float.self)
            let frames = samples.count / channels
            state.withLock { state in
                for frame in 0..<frames {
                    let value = planar ? samples[frame] : samples[frame * channels]
                    let loud = abs(value) > 0.16
                    if loud, !state.loud { state.onsets.append(pts + Double(frame) / 48_000) }
                    // The beep is a sine: it crosses zero often; call it over after 5 ms of quiet.
                    if loud { state.loud = true; state.quietFrames = 0 } else if state.loud {
                        state.quietFrames += 1
                        if state.quietFrames > 240 { state.loud = false }
                    }
                }
            }
        }
    }
}
