import CastlineKit
import StagePlugins
import RunTestSupport
import TestSupport
import Testing

@Suite("gain stage in a real pipeline")
struct GainStageTests {
    @Test("its gain-changed events name the stage as its commands' answers do (gain0), not the bin it made for a stream")
    func eventsNameTheStage() async throws {
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: gain
            source: { test: { audio: {} } }
            stages: [ { gain: { db: -6 } } ]
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        let said = await recorder.first { event in
            if case .stage(let stageEvent) = event.kind { stageEvent.name == "gain-changed" } else { false }
        }
        await runner.stop()
        _ = await runner.wait()
        guard case .stage(let stageEvent)? = said?.kind else {
            Issue.record("no gain-changed event")
            return
        }
        #expect(stageEvent.stage == "gain0")
        #expect(stageEvent.figures["gain_db"] == -6)
    }
}
