import CastlineKit
import Foundation
import StagePlugins
import Synchronization
import RunTestSupport
import TestSupport
import Testing
@testable import StagePlugins

func loadSpec(_ yaml: String) throws -> PipelineSpec {
    try PipelineLoader(catalog: ComponentRegistry.builtin, environment: [:]).load(yaml: yaml, file: "test.yaml")
}

/// Events with the monotonic time they arrived.
final class EventLog: Sendable {
    private let entries = Mutex<[(at: ContinuousClock.Instant, event: RunEvent)]>([])
    func append(_ event: RunEvent) { entries.withLock { $0.append((.now, event)) } }
    var all: [(at: ContinuousClock.Instant, event: RunEvent)] { entries.withLock { $0 } }

    func samples(stream: StreamKind?) -> [StatsSample] {
        all.compactMap { entry in
            if case .stats(let sample) = entry.event.kind, sample.stream == stream { return sample }
            return nil
        }
    }

    func changes() -> [(at: ContinuousClock.Instant, change: SoundChange)] {
        all.compactMap { entry in
            if case .stage(let event) = entry.event.kind, let change = SoundChange(rawValue: event.name) { return (entry.at, change) }
            return nil
        }
    }
}

@Suite("stats stage in a real pipeline", .timeLimit(.minutes(1)), .noGStreamerCriticals)
struct StatsStageTests {
    @Test("test audio and video through stats: samples every interval, exact raw-audio bitrate, rising position, 30 fps")
    func figuresOfKnownStreams() async throws {
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: figures
            source: { test: { video: { width: 160, height: 120, fps: 30 }, audio: {} } }
            stages: [ { stats: { every: 500ms, name: probe } } ]
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let log = EventLog()
        let recorder = RunRecorder(runner) { log.append($0) }
        try await runner.start()
        // Counted from the first sample: a loaded machine may take a while to start the pipeline.
        let firstSample = await recorder.first(within: .seconds(20)) { event in
            if case .stats(let sample) = event.kind { sample.stream == .audio } else { false }
        }
        try #require(firstSample != nil, "no audio sample in 20 s")
        try await Task.sleep(for: .milliseconds(3000))
        await runner.stop()
        _ = await runner.wait()
        _ = await recorder.all()

        let audio = log.samples(stream: .audio)
        let video = log.samples(stream: .video)
        // On the stats stage's own clock (when each sample was emitted): the first, then one every
        // 500 ms, six more in the 3 s after it; the last may fall just past the end of the run.
        let emitted = log.all.compactMap { entry -> Date? in
            guard case .stats(let sample) = entry.event.kind, sample.stream == .audio else { return nil }
            return entry.event.time
        }
        let start = try #require(emitted.first)
        let inWindow = emitted.filter { $0.timeIntervalSince(start) <= 3.05 }.count
        // And one as the stream ends (the stop), which may fall within the window.
        #expect((6...8).contains(inWindow), "\(inWindow) audio samples in the 3 s from the first, at every 500ms: \(emitted)")
        #expect(audio.allSatisfy { $0.stage == "probe" })
        // F32 × 48 kHz × 2 channels = 3072 kbit/s; the first interval starts mid-buffer, so skip it.
        for sample in audio.dropFirst() {
            let bitrate = try #require(sample.figures["bitrate_kbps"])
            #expect(abs(bitrate - 3072) / 3072 < 0.05, "audio bitrate \(bitrate)")
        }
        let positions = audio.compactMap { $0.figures["position_s"] }
        #expect(positions.count == audio.count)
        #expect(zip(positions, positions.dropFirst()).allSatisfy { $0 < $1 }, "positions \(positions)")
        let level = try #require(audio.last?.figures["rms_dbfs"])
        // The default tone is a sine at volume 0.08: 20·log10(0.08/√2) ≈ -25 dBFS; the beeps (3 times
        // as loud, a tenth of the time) make it about -22.4.
        #expect((-26.0)...(-20.0) ~= level, "rms \(level)")
        for sample in video.dropFirst() {
            let fps = try #require(sample.figures["fps"])
            #expect(abs(fps - 30) < 3, "fps \(fps)")
            #expect(sample.figures["rms_dbfs"] == nil)
        }
        #expect(!log.samples(stream: nil).isEmpty, "a pipeline-wide sample")
        #expect(log.samples(stream: nil).first?.figures["latency_ms"] != nil)
    }

    @Test("a live source recorded to a file is live, though no sink waits on the clock (the latency query says not)")
    func liveWithoutASyncingSink() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("live-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: recorded
            source: { test: { audio: {} } }
            stages: [ { stats: { every: 250ms } } ]
            sinks: [ { file: { path: "\(path)" } } ]
            """), registry: .builtin)
        let log = EventLog()
        let recorder = RunRecorder(runner) { log.append($0) }
        try await runner.start()
        let sampled = await recorder.first(within: .seconds(20)) { _ in !log.samples(stream: nil).isEmpty }
        await runner.stop()
        _ = await runner.wait()
        try #require(sampled != nil, "a pipeline-wide sample in 20 s")
        #expect(log.samples(stream: nil).allSatisfy { $0.figures["live"] == 1 }, "\(log.samples(stream: nil).map(\.figures))")
    }

    @Test("after an encoder and a delay, both streams' positions are stream time (no 1000-hour offset); paused, they stand still")
    func positionThroughDelay() async throws {
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: delayed
            source: { test: { video: { width: 160, height: 120, fps: 30 }, audio: {} } }
            stages: [ { encode: {} }, { delay: { initial: 1s, max: 10s } }, { stats: { every: 250ms, name: out } } ]
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let log = EventLog()
        let recorder = RunRecorder(runner) { log.append($0) }
        try await runner.start()
        @Sendable func positions() -> [(stream: StreamKind, position: Double)] {
            log.all.compactMap { entry in
                guard case .stats(let sample) = entry.event.kind, sample.stage == "out", let stream = sample.stream,
                      let position = sample.figures[StatsFigure.position] else { return nil }
                return (stream, position)
            }
        }
        @Sendable func count() -> Int { positions().count }
        let playing = await recorder.first(within: .seconds(20)) { _ in positions().filter { $0.stream == .video }.count >= 4 }
        try #require(playing != nil, "four video positions after the delay in 20 s")
        let before = positions()
        #expect(before.allSatisfy { $0.position >= 0 && $0.position < 60 }, "\(before)")
        await runner.pause()
        // Two samples a stream to let what was under way settle, then six more while it holds.
        let settled = count() + 4
        _ = await recorder.first(within: .seconds(10)) { _ in count() >= settled }
        let held = count()
        _ = await recorder.first(within: .seconds(10)) { _ in count() >= held + 12 }
        let paused = positions().dropFirst(held)
        _ = await runner.resume()
        await runner.stop()
        _ = await runner.wait()
        for stream in [StreamKind.audio, .video] {
            let times = paused.filter { $0.stream == stream }.map(\.position)
            #expect(times.count >= 5 && (times.max() ?? 0) - (times.min() ?? 0) < 0.01, "\(stream) while paused: \(times)")
        }
    }

    @Test("the position is what a sink renders now, in stream time: after an encoder (its 1000-hour PTS) it runs with the clock from the start")
    func positionHeardAfterEncoder() async throws {
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: heard
            source: { test: { video: { width: 160, height: 120, fps: 30 } } }
            stages: [ { encode: { video: {} } }, { stats: { every: 250ms } } ]
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let log = EventLog()
        let recorder = RunRecorder(runner) { log.append($0) }
        try await runner.start()
        let enough = await recorder.first(within: .seconds(20)) { _ in
            log.samples(stream: .video).compactMap { $0.figures[StatsFigure.position] }.count >= 8
        }
        await runner.stop()
        _ = await runner.wait()
        try #require(enough != nil, "eight positions in 20 s")
        let timed = log.all.compactMap { entry -> (ContinuousClock.Instant, Double)? in
            guard case .stats(let sample) = entry.event.kind, sample.stream == .video,
                  let position = sample.figures[StatsFigure.position] else { return nil }
            return (entry.at, position)
        }
        let (firstAt, first) = try #require(timed.first), (lastAt, last) = try #require(timed.last)
        // From the start of the stream (a live test source starts at 0), not 3,600,000 s.
        #expect(first >= 0 && first < 5, "first position \(first)")
        // It moves as the clock does (the encoder's latency is held back, not counted twice).
        let elapsed = (lastAt - firstAt) / .seconds(1)
        #expect(abs((last - first) - elapsed) < 0.1, "moved \(last - first) s in \(elapsed) s")
    }

    @Test("silence is announced after silence-after of quiet, and sound when the tone returns")
    func silenceThenSound() async throws {
        let spec = try loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            stages: [ { stats: { every: 250ms, silence-after: 1s, silence-below: -50 } } ]
            sinks: [ { null: {} } ]
            """)
        let log = EventLog()
        let events = EventEmitter(pipeline: "silence", masker: SecretMasker(secrets: [])) { log.append($0) }
        let stage = try StatsStage(spec: spec.stages[0], context: ComponentContext(
            pipelineName: "silence", componentName: "meter", keyPath: "stages[0]", events: events))

        let pipeline = Pipeline(name: "silence-test")
        let tone = try Element.make("audiotestsrc")
        try tone.set("is-live", true)
        try tone.set("samplesperbuffer", Int32(480))
        try tone.set("volume", 0.5)
        let caps = try BinChain.capsFilter("audio/x-raw,format=S16LE,rate=48000,channels=2")
        let bin = try stage.makeBin(for: .audio, input: .raw, name: "stats-audio")
        let sink = try Element.make("fakesink")
        try pipeline.add(tone, caps, bin, sink)
        try tone.link(caps)
        try caps.link(bin)
        try bin.link(sink)
        pipeline.setState(.playing)
        defer { pipeline.setState(.null) }

        // Silenced once the loud tone has been measured, made loud again once the silence was said.
        #expect(await waitUntil(.seconds(10)) { log.samples(stream: .audio).contains { ($0.figures["rms_dbfs"] ?? -200) > -20 } })
        let quietFrom = ContinuousClock.now
        try tone.set("volume", 0.0)
        #expect(await waitUntil(.seconds(10)) { log.changes().count == 1 })
        let loudFrom = ContinuousClock.now
        try tone.set("volume", 0.5)
        #expect(await waitUntil(.seconds(5)) { log.changes().count == 2 })

        withExtendedLifetime(stage) {}
        let changes = log.changes()
        #expect(changes.map(\.change) == [.silence, .sound], "\(changes)")
        if changes.count == 2 {
            let silenceAfter = (changes[0].at - quietFrom).seconds
            #expect(silenceAfter >= 0.9 && silenceAfter <= 2.0, "silence reported \(silenceAfter) s after the tone stopped")
            let soundAfter = (changes[1].at - loudFrom).seconds
            #expect(soundAfter >= 0 && soundAfter <= 1.0, "sound reported \(soundAfter) s after the tone returned")
        }
        let levels = log.samples(stream: .audio).compactMap { $0.figures["rms_dbfs"] }
        #expect(levels.contains { $0 <= AudioLevel.floor }, "digital silence reads as the floor: \(levels)")
        #expect(levels.contains { $0 > -10 }, "a 0.5 sine reads about -9 dBFS: \(levels)")
    }
}
