@testable import CastlineApp
import CastlineKit
import Testing

@Suite("metrics exposition")
struct MetricsRecorderTests {
    @Test("a gauge the next sample leaves out (a level while no sound came) goes from /metrics instead of keeping its last value")
    func leftOutGoes() {
        let recorder = MetricsRecorder()
        recorder.record(StatsSample(stage: "stats1", stream: .audio, figures: ["rms_dbfs": -21, "bitrate_kbps": 128]), pipeline: "p")
        #expect(recorder.exposition().contains("castline_rms_dbfs{"), "\(recorder.exposition())")
        recorder.record(StatsSample(stage: "stats1", stream: .audio, figures: ["bitrate_kbps": 0]), pipeline: "p")
        let stalled = recorder.exposition()
        #expect(!stalled.contains("castline_rms_dbfs{") && stalled.contains("castline_bitrate_kbps{"), "\(stalled)")
        recorder.record(StatsSample(stage: "stats1", stream: .audio, figures: ["rms_dbfs": -20, "bitrate_kbps": 128]), pipeline: "p")
        #expect(recorder.exposition().contains("castline_rms_dbfs{"), "\(recorder.exposition())")
    }
}
