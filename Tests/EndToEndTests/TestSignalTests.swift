import Foundation
import LocalIngest
import Testing

/// The test source is an A/V sync check: the beep and the flash mark the same instant.
@Suite("test signal", .timeLimit(.minutes(2)))
struct TestSignalTests {
    @Test("every second the beep and the white square's flash land together (within two frames)")
    func beepAndFlashTogether() async throws {
        let scratch = try Scratch()
        let recording = scratch.file("av.mkv")
        let pipeline = try scratch.write("av.yaml", """
            version: 1
            source:
              test:
                video: { width: 320, height: 240 }
                audio: {}
            stages: [ { encode: {} } ]
            sinks: [ { file: \(recording) } ]
            """)
        let run = try await Castline.run(["run", pipeline, "--duration", "5s"])
        try #require(run.status == 0, "\(run.stderr)")

        let (beeps, audioLength) = try await beepTimes(recording, scratch: scratch)
        // A flash in the first or last frames may have no audio to beep in: the streams start and
        // end a buffer apart (seen under load: a flash at 0.008 s, the sound's first beep at 0.905 s).
        let flashes = try await flashTimes(recording).filter { $0 > 0.15 && $0 < audioLength - 0.15 }
        #expect(flashes.count >= 4, "flashes at \(flashes)")
        #expect(beeps.count >= 4, "beeps at \(beeps)")
        // One mark a second: to a frame, or two when the live source drops one under a full
        // test run's load (seen: 1.067 s, one run in four).
        for (later, earlier) in zip(flashes.dropFirst(), flashes) {
            #expect(abs(later - earlier - 1) < 0.07, "flashes at \(flashes)")
        }
        for flash in flashes {
            let nearest = beeps.min { abs($0 - flash) < abs($1 - flash) } ?? .infinity
            // Within a frame on a quiet machine (about 10 ms measured); two frames under a full test run's load.
            #expect(abs(nearest - flash) < 0.07, "flash at \(flash), nearest beep at \(nearest)")
        }
    }

    @Test("ten minutes of the test signal (tone, beeps, clock code; bars, moving caption, flashes) through the alarms stage: no alarm, near line-up level")
    func noFalseAlarms() async throws {
        let scratch = try Scratch()
        // Made as fast as the pipeline runs (`live: false`, a sink off the clock): ten minutes of
        // media (--duration counts media) in seconds. A small picture: the checks judge the same bars and caption.
        let pipeline = try scratch.write("signal.yaml", """
            version: 1
            name: signal
            source: { test: { live: false, video: { width: 160, height: 90, fps: 10 }, audio: {} } }
            stages: [ { alarms: { every: 1s } } ]
            sinks: [ { null: { sync: false } } ]
            """)
        let run = try await Castline.run(["run", pipeline, "--duration", "600s", "--stats-json", "-"], timeout: .seconds(90))
        #expect(run.status == 0, "\(run.stderr)")
        let events = jsonLines(run.stdout)
        let alarms = events.filter { ($0["event"] as? String)?.hasPrefix("alarm-") == true }
        #expect(alarms.isEmpty, "\(alarms.prefix(5))")
        let loudness = events.filter { $0["stream"] as? String == "audio" && $0["loudness_i_lufs"] != nil }
        let integrated = try #require(loudness.last?["loudness_i_lufs"] as? Double, "\(run.stderr)")
        let shortTerm = loudness.compactMap { $0["loudness_s_lufs"] as? Double }
        // Near EBU R68's line-up level (-18), and under R128's "loud" (8 LU over -23) by a margin.
        #expect((-21.0)...(-16.5) ~= integrated, "integrated \(integrated) LUFS")
        #expect(!shortTerm.isEmpty && shortTerm.allSatisfy { $0 < -16.5 }, "short-term \(shortTerm.max() ?? 0) LUFS at most")
    }

    @Test("caption: still stays top left; the default caption moves across the top")
    func stillCaptionStays() async throws {
        let scratch = try Scratch()
        // Pixels (of 320x240) that differ between frame 3 and frame 87 (2.9 s), above the clock
        // stripe: a still caption changes only its own text, from the first character that
        // differs on (the date and the time before it stay); a moving one has moved right by
        // then, so the bars come back from its left edge on.
        func changed(caption: String) async throws -> (rows: ClosedRange<Int>, columns: ClosedRange<Int>)? {
            let recording = scratch.file("\(caption).mkv")
            let pipeline = try scratch.write("\(caption).yaml", """
                version: 1
                source:
                  test:
                    video: { width: 320, height: 240, caption: \(caption) }
                    audio: { beep: 0s }
                stages: [ { encode: {} } ]
                sinks: [ { file: \(recording) } ]
                """)
            let run = try await Castline.run(["run", pipeline, "--duration", "3500ms"])
            try #require(run.status == 0, "\(run.stderr)")
            let raw = scratch.file("\(caption).gray")
            let frames = try await ChildProcess.run("/usr/bin/ffmpeg", [
                "-v", "error", "-i", recording, "-vf", "select='eq(n\\,3)+eq(n\\,87)'", "-vsync", "0",
                "-pix_fmt", "gray", "-f", "rawvideo", raw,
            ])
            try #require(frames.status == 0, "\(frames.stderr)")
            let pixels = [UInt8](try Data(contentsOf: URL(fileURLWithPath: raw)))
            let size = 320 * 240
            try #require(pixels.count == 2 * size, "\(pixels.count) bytes of frames")
            let changed = (0..<size).filter { abs(Int(pixels[$0]) - Int(pixels[size + $0])) > 40 }
            // The clock stripe along the bottom (a fifteenth of the picture) changes every frame by design.
            #expect(changed.contains { $0 / 320 >= 240 - 240 / 15 }, "the picture clock did not change")
            let caption = changed.filter { $0 / 320 < 240 - 240 / 15 }
            guard let first = caption.first, let last = caption.last,
                  let left = caption.map({ $0 % 320 }).min(), let right = caption.map({ $0 % 320 }).max() else { return nil }
            return (first / 320...last / 320, left...right)
        }
        let still = try #require(try await changed(caption: "still"), "the still caption's text did not change")
        #expect(still.rows.upperBound < 36, "a still caption changed rows \(still.rows)")
        let moving = try #require(try await changed(caption: "moving"))
        #expect(moving.rows.upperBound < 36, "a moving caption changed rows \(moving.rows): it moves across, not down")
        #expect(moving.columns.lowerBound + 20 < still.columns.lowerBound,
                "a moving caption changed columns \(moving.columns), a still one \(still.columns)")
    }

    /// Times of the first frame of each run of frames whose middle (inside the flashed square) is white.
    func flashTimes(_ file: String) async throws -> [Double] {
        let result = try await ChildProcess.run("/usr/bin/ffprobe", [
            "-v", "error", "-f", "lavfi", "-i", "movie=\(file),crop=w=ih/6:h=ih/6,signalstats",
            "-show_entries", "frame=pts_time:frame_tags=lavfi.signalstats.YAVG", "-of", "csv=p=0",
        ])
        var times: [Double] = []
        var wasWhite = false
        for line in result.stdout.split(separator: "\n") {
            let fields = line.split(separator: ",").compactMap { Double($0) }
            guard fields.count == 2 else { continue }
            let isWhite = fields[1] > 200
            if isWhite, !wasWhite { times.append(fields[0]) }
            wasWhite = isWhite
        }
        return times
    }

    /// Times where the audio level jumps from the tone to the (louder) beep, in 5 ms windows; and the audio's length.
    func beepTimes(_ file: String, scratch: Scratch) async throws -> (times: [Double], length: Double) {
        let raw = scratch.file("audio.f32")
        let decode = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-v", "error", "-i", file, "-map", "0:a", "-ac", "1", "-ar", "48000", "-f", "f32le", raw,
        ])
        try #require(decode.status == 0, "\(decode.stderr)")
        let samples = try Data(contentsOf: URL(fileURLWithPath: raw)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let window = 240
        let levels = stride(from: 0, to: samples.count - window, by: window).map { start in
            (samples[start..<start + window].reduce(0) { $0 + $1 * $1 } / Float(window)).squareRoot()
        }
        // The beep is 3 times as loud as the tone, which fills most of each second: over twice the
        // median level is a beep, whatever the level the signal was made at.
        let threshold = 2 * (levels.sorted().dropFirst(levels.count / 2).first ?? 1)
        var times: [Double] = []
        var wasLoud = false
        for (index, level) in levels.enumerated() {
            let isLoud = level > threshold
            if isLoud, !wasLoud { times.append(Double(index * window) / 48_000) }
            wasLoud = isLoud
        }
        return (times, Double(samples.count) / 48_000)
    }
}
