import CastlineKit
@testable import StagePlugins
import Foundation
import GstKit
import StagePlugins
import TestSupport
import Testing

@Suite("Play-out by position and by the clock")
struct PositionTests {
    @Test("seek to a position: before the start plays from the start, in between resumes after it, past the newest waits")
    func seekToPosition() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        for sequence in 100..<200 { appendAudio(buffer, sequence) }  // 2 s ... 3.98 s
        var cursor = HistoryCursor(delay: .zero, position: nil)
        #expect(buffer.seek(&cursor, toPosition: 0) == 100 * audioStep)
        #expect(buffer.due(&cursor).first?.payload.sequence == 100)
        #expect(buffer.seek(&cursor, toPosition: 150 * audioStep) == 150 * audioStep)
        #expect(buffer.due(&cursor).map(\.payload.sequence) == Array(151..<200))
        #expect(buffer.seek(&cursor, toPosition: 500 * audioStep) == 199 * audioStep)
        #expect(buffer.due(&cursor).isEmpty)
        appendAudio(buffer, 200)
        #expect(buffer.due(&cursor).map(\.payload.sequence) == [200])
        #expect(buffer.isCaughtUp(cursor))
    }

    @Test("due through a limit hands out the units up to it, each once, and no further")
    func dueThrough() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        for sequence in 0..<100 { appendAudio(buffer, sequence) }
        var cursor = HistoryCursor(delay: .zero, position: nil)
        buffer.seek(&cursor, toPosition: 0)  // the unit at 0 counts as played
        #expect(buffer.due(&cursor, through: 10 * audioStep).map(\.payload.sequence) == Array(1...10))
        #expect(buffer.due(&cursor, through: 10 * audioStep).isEmpty)
        #expect(!buffer.isCaughtUp(cursor))
        #expect(buffer.due(&cursor, through: 20 * audioStep + 1).map(\.payload.sequence) == Array(11...20))
        #expect(buffer.due(&cursor, through: .max).count == 79)
        #expect(buffer.isCaughtUp(cursor))
    }

    @Test("a unit slot of the delay stage's history is 32 bytes, its optional too")
    func unitSize() {
        #expect(MemoryLayout<StoredUnit<ByteSlice>>.stride == 32)
        #expect(MemoryLayout<StoredUnit<ByteSlice>?>.stride == 32)
        let unit = StoredUnit(pts: 7, duration: 21_333_333, payload: 0, byteSize: 341, isKeyframe: true)
        #expect(unit.duration == 21_333_333 && unit.byteSize == 341 && unit.isKeyframe)
        let long = StoredUnit(pts: 7, duration: 5_000_000_000, payload: 0, byteSize: 1, isKeyframe: false)
        #expect(long.duration == 0 && !long.isKeyframe)  // longer than 32 bits of ns: unknown
    }

    @Test("source timeline: the stream's own PTS of a running time, across a change of offset")
    func sourceTimeline() {
        let timeline = SourceTimeline()
        #expect(timeline.streamPTS(stream: 0, runningTime: 5) == nil)
        timeline.saw(stream: 0, runningTime: 0, streamPTS: 84 * second)
        timeline.saw(stream: 0, runningTime: second, streamPTS: 85 * second)  // same offset: no change kept
        timeline.saw(stream: 0, runningTime: 10 * second, streamPTS: 3 * second)  // a new segment
        #expect(timeline.streamPTS(stream: 0, runningTime: 2 * second) == 86 * second)
        #expect(timeline.streamPTS(stream: 0, runningTime: 12 * second) == 5 * second)
        #expect(timeline.streamPTS(stream: 1, runningTime: 12 * second) == nil)
    }
}

/// A file source pushes its media as fast as it can read it: the history takes
/// it all at once, and the play-out hands the appsrc only what is due on the
/// clock, so the media is not held a second time as GStreamer buffers.
@Suite("delay stage fed faster than real time", .serialized, .timeLimit(.minutes(2)), .noGStreamerCriticals)
struct FastSourceTests {
    @Test("30 s of AAC from a file: held at once; the appsrc holds at most ~lead; play-out in real time")
    func fileIsHeldNotQueued() async throws {
        let folder = NSTemporaryDirectory() + "delay-fast-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let media = folder + "/tone.aac"
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "30",
                            "-c:a", "aac", "-b:a", "128k", "-ac", "2", media]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)

        let spec = try PipelineLoader(catalog: ComponentRegistry.builtin).load(yaml: """
            version: 1
            name: delay-fast
            source:
              file: \(media)
            stages:
              - delay: { initial: 0s, max: 1m }
            sinks:
              - null: {}
            """, file: "delay-fast.yaml")
        let built = try GraphBuilder().build(ComponentRegistry.builtin.plan(spec))
        let stage = try #require(built.plan.stages.first?.component as? DelayStage)
        let appsrc = try #require(built.pipeline.element(named: "stage-delay0-audio-playout"))
        built.pipeline.setState(.playing)
        defer { built.pipeline.setState(.null) }
        var queued: [Int] = []
        for _ in 0..<20 {
            try await Task.sleep(for: .milliseconds(100))
            queued.append(appsrc.int("current-level-bytes") ?? -1)
        }
        let held = stage.playout.history.available.seconds
        let running = built.pipeline.runningTime?.seconds ?? 0
        print("fast file: held \(held) s after \(running) s; appsrc queue bytes \(queued)")
        #expect(held > 29)
        // 128 kbit/s is 16 kB a second: `lead` (200 ms) and a tick are ~4 kB; the file is 480 kB.
        #expect(queued.allSatisfy { $0 >= 0 && $0 <= 8_000 }, "\(queued)")
        #expect(running > 1.5 && running < 4)
    }
}
