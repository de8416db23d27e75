import CastlineKit
import Foundation
import RunTestSupport
import Testing
@testable import StagePlugins

/// castline's own test signal, as the test source makes it, through the alarms stage with its
/// default checks: a test broadcast that `monitor` watches must not be called faulty.
@Suite("the test signal through the alarms stage", .timeLimit(.minutes(2)), .noGStreamerCriticals)
struct TestSignalAlarmsTests {
    @Test("ten minutes of the test signal (tone, beeps, clock code; bars, moving caption, flashes): no alarm, near line-up level")
    func noFalseAlarms() async throws {
        // Made as fast as the pipeline runs (`live: false`, a sink off the clock): ten minutes
        // of media in seconds. A small picture: the checks judge the same bars and caption.
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: signal
            source: { test: { live: false, video: { width: 192, height: 108, fps: 25 }, audio: {} } }
            stages:
              - alarms: { every: 200ms }
              - stats: { every: 200ms }
            sinks: [ { null: { sync: false } } ]
            """), registry: .builtin)
        let log = EventLog()
        let recorder = RunRecorder(runner) { log.append($0) }
        try await runner.start()
        let tenMinutes = await recorder.first(within: .seconds(100)) { event in
            guard case .stats(let sample) = event.kind, sample.stream == .audio else { return false }
            // Off the clock the position is the wall clock's: count the raw sound instead
            // (F32, stereo, 48 kHz).
            return (sample.figures["bytes"] ?? 0) >= 600 * 48_000 * 2 * 4
        }
        await runner.stop()
        _ = await runner.wait()
        let events = await recorder.all()
        try #require(tenMinutes != nil, "ten minutes of media not made in 100 s")

        let alarms = events.compactMap { event -> StageEvent? in
            if case .stage(let stage) = event.kind, stage.alarm != nil { return stage }
            return nil
        }
        #expect(alarms.isEmpty, "\(alarms.prefix(5))")
        let loudness = log.samples(stream: .audio).filter { $0.figures[AlarmsStage.integrated.name] != nil }
        let shortTerm = loudness.compactMap { $0.figures[AlarmsStage.shortTerm.name] }
        let integrated = try #require(loudness.last?.figures[AlarmsStage.integrated.name])
        // Near EBU R68's line-up level (-18), and under R128's "loud" (8 LU over -23) by a margin.
        #expect((-21.0)...(-17.0) ~= integrated, "integrated \(integrated) LUFS")
        #expect(shortTerm.count > 10 && shortTerm.allSatisfy { $0 < -16.5 }, "short-term \(shortTerm.max() ?? 0) LUFS at most")
    }
}
