import CastlineKit
import Foundation
import StagePlugins
import RunTestSupport
import TestSupport
import Testing

@Suite("PipelineRunner: states, outcomes, failures", .timeLimit(.minutes(1)), .noGStreamerCriticals)
struct PipelineRunnerTests {
    /// Collects every event of a run.
    func collect(_ runner: PipelineRunner) -> Task<[RunEvent], Never> {
        Task {
            var seen: [RunEvent] = []
            for await event in runner.events { seen.append(event) }
            return seen
        }
    }

    func states(_ events: [RunEvent]) -> [RunState] {
        events.compactMap { event in
            if case .stateChanged(_, let to) = event.kind { return to }
            return nil
        }
    }

    @Test("a live run stopped on request drains and walks connecting → playing → stopping → stopped")
    func stopOnRequest() async throws {
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        #expect(await recorder.reached(.playing))
        #expect(await runner.state == .playing)
        await runner.stop()
        #expect(await runner.wait() == .stopped)
        #expect(states(await recorder.all()) == [.connecting, .playing, .stopping, .stopped])
    }

    @Test("media that ends completes the run")
    func endOfMedia() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("castline-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        let recorder = try PipelineRunner(spec: try loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            sinks: [ { file: \(scratch) } ]
            """), registry: .builtin)
        // One second of media, counted by the sink's input, then the run ends by itself.
        await recorder.limit(to: .seconds(1))
        try await recorder.start()
        #expect(await recorder.wait() == .completed)
        #expect(FileManager.default.fileExists(atPath: scratch))

        let player = try PipelineRunner(spec: try loadSpec("""
            version: 1
            source: { file: \(scratch) }
            sinks: [ { null: { sync: false } } ]
            """), registry: .builtin)
        let events = collect(player)
        try await player.start()
        #expect(await player.wait() == .completed)
        #expect(await events.value.contains { if case .endOfStream = $0.kind { true } else { false } })
    }

    @Test("a recording that no media reached fails the run, and leaves no file that looks like one")
    func emptyRecording() async throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("castline-\(UUID().uuidString).mkv").path
        defer { try? FileManager.default.removeItem(atPath: scratch + ".partial") }
        let recorder = try PipelineRunner(spec: try loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            stages: [ { encode: {} } ]
            sinks: [ { file: \(scratch) } ]
            """), registry: .builtin)
        // The run ends before its first buffer: the muxer has written a header and nothing else.
        await recorder.limit(to: .zero)
        try await recorder.start()
        let outcome = await recorder.wait()
        #expect(outcome == .failed("nothing was recorded to \(scratch): no media reached it before the end"), "\(outcome)")
        #expect(!FileManager.default.fileExists(atPath: scratch) && !FileManager.default.fileExists(atPath: scratch + ".partial"))
    }

    @Test("an element failing while running fails the run, naming the stage it belongs to")
    func failureNamesTheStage() async throws {
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            source: { test: { audio: {} } }
            stages: [ { gst: { description: "identity error-after=20", stream: audio } } ]
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let events = collect(runner)
        try await runner.start()
        let outcome = await runner.wait()
        guard case .failed(let text) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(text.contains("stages[0].gst"), "\(text)")
        #expect(states(await events.value).last == .failed)
    }
}
