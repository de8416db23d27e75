@testable import CastlineApp
import Foundation
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

@Suite("load metrics")
struct LoadMetricsTests {
    private func exposition(_ metrics: LoadMetrics) -> String {
        var bytes: [UInt8] = []
        metrics.registry.emit(into: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test("viewers playing and stalled now beside active; behind-live buckets only while some viewer's latency is known")
    func viewersAndBehindLive() {
        let metrics = LoadMetrics()
        var totals = LoadTotals()
        (totals.started, totals.active, totals.playingNow, totals.stalledNow) = (20, 20, 17, 3)
        metrics.record(totals)
        var text = exposition(metrics)
        #expect(text.contains(#"castline_load_viewers{state="playing"} 17"#) && text.contains(#"castline_load_viewers{state="stalled"} 3"#), "\(text)")
        #expect(!text.contains("castline_load_viewers_behind_live_seconds{"), "no PROGRAM-DATE-TIME: no zeros saying nobody is behind\n\(text)")
        totals.liveLatencies = [4.5, 7.5]
        metrics.record(totals)
        text = exposition(metrics)
        #expect(text.contains(#"castline_load_viewers_behind_live_seconds{le="5.0"} 1"#)
                && text.contains(#"castline_load_viewers_behind_live_seconds{le="+Inf"} 2"#), "\(text)")
        totals.liveLatencies = []
        metrics.record(totals)
        #expect(!exposition(metrics).contains("castline_load_viewers_behind_live_seconds{"))
    }
}

@Suite("the control API's figures")
struct LatestFiguresTests {
    @Test("the position is the outermost stats stage's (after a delay: what plays), as the status line shows it, whichever reported first")
    func outermostSpeaks() {
        var figures = LatestFigures(commands: [])
        figures.measuringStages = ["lvl", "out"]
        func sample(_ stage: String, _ position: Double) -> RunEvent {
            RunEvent(time: Date(), pipeline: "p", kind: .stats(StatsSample(stage: stage, stream: .audio, figures: [StatsFigure.position: position])))
        }
        figures.add(sample("lvl", 7))
        #expect(figures.position == 7, "only the inner stage has reported yet")
        figures.add(sample("out", 5))
        figures.add(sample("lvl", 8))
        #expect(figures.position == 5)
    }
}
