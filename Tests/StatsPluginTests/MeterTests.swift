import CastlineKit
import Foundation
import Testing
@testable import StagePlugins

@Suite("stats arithmetic")
struct MeterTests {
    @Test("bitrate over the interval and over 10 s, jitter, late and dropped frames")
    func meterFigures() {
        var meter = StreamMeter(stream: .video)
        let frame: UInt64 = 33_333_333
        // 30 frames of 12 500 bytes in one second = 3000 kbit/s; frame 10 is missing (dropped),
        // frame 20 arrives two frame spacings late.
        for index in 0..<31 where index != 10 {
            let arrival = UInt64(index) * frame + (index == 20 ? 2 * frame : 0)
            meter.record(BufferFacts(pts: UInt64(index) * frame, duration: frame, size: 12_500, arrival: arrival))
        }
        let figures = meter.snapshot(now: 1_000_000_000)
        #expect(abs((figures["bitrate_kbps"] ?? 0) - 3000) < 0.01)
        #expect(abs((figures["bitrate_10s_kbps"] ?? 0) - 3000) < 0.01)
        #expect(figures["throughput_kbps"] == 3000)
        #expect(figures["buffers"] == 30)
        #expect(figures["dropped_frames"] == 1)
        #expect(figures["late_frames"] == 1)
        // Per second of the media time the frames span: 30 frames over 31 frames' time (one missing).
        #expect(abs((figures["fps"] ?? 0) - 30 * 30.0 / 31) < 1e-5, "\(figures["fps"] ?? 0)")
        #expect(abs((figures["position_s"] ?? 0) - 1.0) < 0.001)
        #expect((figures["jitter_ms"] ?? 0) > 0)
        // An idle second halves the 10 s rate and zeroes the 1 s one.
        let idle = meter.snapshot(now: 2_000_000_000)
        #expect(idle["bitrate_kbps"] == 0)
        #expect(abs((idle["bitrate_10s_kbps"] ?? 0) - 1500) < 0.01)
    }

    @Test("a gap that a time-shift's pause made (it holds back that much more after it) is no frames dropped; a frame missing beside it is")
    func pauseIsNotDropped() {
        var meter = StreamMeter(stream: .video)
        let frame: UInt64 = 33_333_333, pause: UInt64 = 3_000_000_000
        var times = (0..<10).map { UInt64($0) * frame }
        times += (10..<20).map { UInt64($0) * frame + pause }
        times.remove(at: 15)
        for time in times {
            let held = Int64(time >= pause ? 1_000_000_000 + pause : 1_000_000_000)
            meter.record(BufferFacts(pts: time, duration: frame, size: 1000, arrival: time, held: held))
        }
        #expect(meter.snapshot(now: 5_000_000_000)["dropped_frames"] == 1)
    }

    @Test("a pipeline paused between two frames (its base time moved on by the pause) is no late frame; the same wait unpaused is")
    func pipelinePauseIsNotLate() {
        let frame: UInt64 = 33_333_333, pause: UInt64 = 3_000_000_000
        for paused in [true, false] {
            var meter = StreamMeter(stream: .video)
            for index in 0..<20 {
                let time = UInt64(index) * frame, resumed = index >= 10
                meter.record(BufferFacts(pts: time, duration: frame, size: 1000, arrival: time + (resumed ? pause : 0),
                                         baseTime: 1_000_000 + (resumed && paused ? pause : 0)))
            }
            #expect(meter.snapshot(now: 5_000_000_000)["late_frames"] == (paused ? 0 : 1), "paused: \(paused)")
        }
    }

    @Test("an interval in which no sound came has no level (not the floor silence reads as)")
    func noSoundNoLevel() {
        var meter = StreamMeter(stream: .audio)
        meter.record(BufferFacts(pts: 0, duration: 10_000_000, size: 1000, arrival: 0), level: AudioLevel(sumOfSquares: 0.25 * 100, peak: 0.5, samples: 100))
        let heard = meter.snapshot(now: 1_000_000_000)
        #expect(abs((heard["rms_dbfs"] ?? 0) + 6.02) < 0.01, "\(heard)")
        let stalled = meter.snapshot(now: 2_000_000_000)
        #expect(stalled["rms_dbfs"] == nil && stalled["peak_dbfs"] == nil && stalled["bitrate_kbps"] == 0, "\(stalled)")
    }

    @Test("bitrate counts media time: a burst of two seconds of buffers in one second reads as the stream's rate")
    func burst() {
        var meter = StreamMeter(stream: .audio)
        for index in 0..<200 {
            meter.record(BufferFacts(pts: UInt64(index) * 10_000_000, duration: 10_000_000, size: 1000,
                                     arrival: UInt64(index) * 5_000_000))
        }
        let figures = meter.snapshot(now: 1_000_000_000)
        #expect(figures["bitrate_kbps"] == 800)
        #expect(figures["throughput_kbps"] == 1600)
    }

    @Test("the first discontinuity is not news; gaps count flags and events")
    func flags() {
        var meter = StreamMeter(stream: .audio)
        meter.record(BufferFacts(pts: 0, size: 10, isDiscont: true, arrival: 0))
        meter.record(BufferFacts(pts: 10, size: 10, isDiscont: true, isGap: true, arrival: 10))
        meter.recordGapEvent()
        let figures = meter.snapshot(now: 100)
        #expect(figures["discontinuities"] == 1)
        #expect(figures["gaps"] == 2)
        #expect(figures["fps"] == nil)
    }

    @Test("levels in dBFS from S16 and F32 samples")
    func levels() {
        let half: [Int16] = [16384, -16384, 16384, -16384]
        let s16 = half.withUnsafeBytes { AudioLevel.measure($0, format: .s16) }
        #expect(abs((s16.rmsDBFS ?? 0) - (-6.02)) < 0.01)
        #expect(abs((s16.peakDBFS ?? 0) - (-6.02)) < 0.01)
        let silent: [Float] = [0, 0, 0]
        let f32 = silent.withUnsafeBytes { AudioLevel.measure($0, format: .f32) }
        #expect(f32.rmsDBFS == AudioLevel.floor)
        #expect(SampleFormat(caps: "S24LE") == nil)
    }

    @Test("silence after the quiet lasts long enough, sound at once when it ends")
    func silenceDetector() {
        var detector = SilenceDetector(threshold: -60, after: .seconds(1))
        #expect(detector.feed(rmsDBFS: -70, duration: .milliseconds(600)) == nil)
        #expect(detector.feed(rmsDBFS: -70, duration: .milliseconds(600)) == .silence)
        #expect(detector.feed(rmsDBFS: -70, duration: .milliseconds(600)) == nil)
        #expect(detector.feed(rmsDBFS: -20, duration: .milliseconds(10)) == .sound)
        #expect(detector.silences == 1)
    }

    @Test("JSON lines: ts in RFC 3339 UTC with milliseconds, event, pipeline, flattened figures")
    func jsonLine() throws {
        let event = RunEvent(
            time: Date(timeIntervalSince1970: 1_700_000_000.345), pipeline: "p",
            kind: .stats(StatsSample(stage: "s", stream: .audio, figures: ["bitrate_kbps": 128, "bad": .nan])))
        let line = EventJSON.line(event)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["ts"] as? String == "2023-11-14T22:13:20.345Z")
        #expect(object["event"] as? String == "stats")
        #expect(object["stream"] as? String == "audio")
        #expect(object["bitrate_kbps"] as? Double == 128)
        #expect(object["bad"] == nil)
        let state = EventJSON.object(RunEvent(pipeline: "p", kind: .stateChanged(from: .connecting, to: .playing)))
        #expect(state["event"] as? String == "state" && state["to"] as? String == "playing")
    }
}
