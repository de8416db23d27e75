import Foundation
import LocalIngest
import Testing

/// The latency stage against injected truth: a known A/V offset and a re-encode by ffmpeg
/// (a delay moved by a known amount is in PauseTests, two listeners' media in DelayListenTests).
@Suite("latency and A/V offset, measured", .serialized, .timeLimit(.minutes(3)))
struct LatencyTests {
    /// The latency stage's samples in JSON lines a finished run wrote (every line whole).
    static func samples(_ text: String) -> [[String: Any]] {
        jsonLines(text).filter { $0["event"] as? String == "stats" && ($0["latency_audio_s"] != nil || $0["latency_video_s"] != nil) }
    }

    static func testSignal(avOffset: String) -> String {
        """
        version: 1
        name: measured
        source: { test: { video: { width: 640, height: 360 }, audio: {}, av-offset: \(avOffset) } }
        stages: [ { encode: {} }, { latency: {} } ]
        sinks: [ { null: {} } ]
        """
    }

    @Test("a known A/V offset through H.264/AAC encoding reads back within a frame: +120 ms, and 0 ms")
    func knownOffset() async throws {
        let scratch = try Scratch()
        // Both at once (two pipelines side by side): half the time.
        let files = try [("120ms", "late"), ("0s", "together")].map { offset, name in
            try scratch.write("\(name).yaml", Self.testSignal(avOffset: offset).replacingOccurrences(of: "name: measured", with: "name: \(name)"))
        }
        let both = try await Castline.run(["run"] + files + ["--duration", "4s", "--stats-json", "-"])
        try #require(both.status == 0, "\(both.stderr)")
        for (name, expected) in [("late", 120.0), ("together", 0.0)] {
            let lines = both.stdout.split(separator: "\n").filter { $0.contains("\"pipeline\":\"\(name)\"") }.joined(separator: "\n")
            let offsets = Self.samples(lines).compactMap { $0["av_offset_ms"] as? Double }
            print("\(name): A/V offset read \(offsets.map { String(format: "%.1f", $0) }.joined(separator: ", ")) ms")
            #expect(offsets.count >= 2, "\(lines.suffix(600))")
            // Within one frame at 30 fps.
            #expect(offsets.allSatisfy { abs($0 - expected) <= 34 }, "\(offsets)")
            // Played where it was made: the picture's latency is the pipeline's own, well under a second.
            let video = Self.samples(lines).compactMap { $0["latency_video_s"] as? Double }
            #expect(!video.isEmpty && video.allSatisfy { $0 > -0.05 && $0 < 0.5 }, "\(video)")
        }
    }

    @Test("re-encoded by ffmpeg (640x360, 1 Mbit/s), the clock still reads in every second")
    func throughFFmpeg() async throws {
        let scratch = try Scratch()
        let original = scratch.file("original.mkv"), reencoded = scratch.file("reencoded.mkv")
        let make = try scratch.write("make.yaml", """
            version: 1
            source: { test: { video: { width: 1280, height: 720 }, audio: {} } }
            stages: [ { encode: {} } ]
            sinks: [ { file: \(original) } ]
            """)
        // 6 s holds at least 5 whole marks, and all are read: ffmpeg's AAC at 96k drops the tone
        // for 25 ms now and then, which takes one code slot, and the parity tells it
        // (SoundClockReaderTests). Made and read with two to four CPU burners beside: 5 or 6, every time.
        let made = try await Castline.run(["run", make, "--duration", "6s"])
        try #require(made.status == 0, "\(made.stderr)")
        let ffmpeg = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-v", "error", "-i", original, "-vf", "scale=640:360", "-c:v", "libx264", "-b:v", "1M", "-maxrate", "1M",
            "-bufsize", "1M", "-c:a", "aac", "-b:a", "96k", reencoded,
        ], timeout: .seconds(60))
        try #require(ffmpeg.status == 0, "\(ffmpeg.stderr)")
        let read = try scratch.write("read.yaml", """
            version: 1
            source: { file: \(reencoded) }
            stages: [ { latency: {} } ]
            sinks: [ { null: {} } ]
            """)
        let run = try await Castline.run(["run", read, "--stats-json", "-"])
        try #require(run.status == 0, "\(run.stderr)")
        let samples = Self.samples(run.stdout)
        // The 6 s file: 130 of its 180 frames read or more, and every one of its 5 or 6 beeps.
        let frames = samples.compactMap { $0["clock_reads_video"] as? Double }.reduce(0, +)
        let beeps = samples.compactMap { $0["clock_reads_audio"] as? Double }.reduce(0, +)
        let video = samples.compactMap { $0["latency_video_s"] as? Double }
        let audio = samples.compactMap { $0["latency_audio_s"] as? Double }
        print("re-encoded: \(Int(frames)) frames and \(Int(beeps)) beeps read in 6 s")
        #expect(frames >= 130, "\(run.stdout.suffix(800))")
        #expect(beeps >= 5, "\(run.stdout.suffix(800))")
        // Played a few seconds after it was made: every reading says so, and they agree.
        #expect(video.allSatisfy { $0 > 0 && $0 < 60 } && audio.allSatisfy { $0 > 0 && $0 < 60 }, "\(video) \(audio)")
        // The sound was made in step with the picture: each beep's reading is the picture's,
        // within 0.1 s (a number misread, or a beep timed wrongly, is seconds off).
        let picture = try #require(LatencyStageMedian.of(video), "\(run.stdout.suffix(800))")
        #expect(audio.allSatisfy { abs($0 - picture) < 0.1 }, "picture \(picture) s, sound \(audio)")
        #expect(!run.stderr.contains("no castline test-signal clock"), "\(run.stderr)")
    }

    @Test("a signal without the clock (clock: false) is said once, and no figure is made up")
    func noClock() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("plain.yaml", """
            version: 1
            source: { test: { clock: false, video: { width: 320, height: 180 }, audio: {} } }
            stages: [ { latency: { missing-after: 1s } } ]
            sinks: [ { null: {} } ]
            """)
        let run = try await Castline.run(["run", file, "--duration", "3s", "--stats-json", "-"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Self.samples(run.stdout).isEmpty, "latency figures without a clock: \(run.stdout.suffix(400))")
        // One line for the picture, one for the sound: each said once.
        let said = run.stderr.components(separatedBy: "no castline test-signal clock").count - 1
        #expect(said == 2, "\(run.stderr)")
    }

    @Test("castline latency: --local takes no other argument; without it, the ingest and --play are needed; a token only with WHIP or WHEP")
    func latencyCommandFlags() async throws {
        for (arguments, wanted) in [
            (["latency", "--local", "--play", "http://x/y.m3u8"], "--local starts its own ingest"),
            (["latency", "rtmp://127.0.0.1/live", "--key-env", "K"], "--play PLAYBACK_URL"),
            (["latency", "rtmp://127.0.0.1/live", "--play", "http://x/y.m3u8"], "--key-env"),
            (["latency", "--local", "--duration", "soon"], "--duration"),
            (["latency", "rtmp://127.0.0.1/live", "--key-env", "K", "--play", "http://x/y.m3u8", "--token-env", "T"],
             "--token-env and --token-file are for WHIP and WHEP endpoints"),
        ] {
            let result = try await Castline.run(arguments)
            #expect(result.status == 64 && result.stderr.contains(wanted), "\(arguments): \(result.status) \(result.stderr)")
        }
    }
}

/// The middle of a few readings.
enum LatencyStageMedian {
    static func of(_ values: [Double]) -> Double? {
        guard !values.isEmpty else { return nil }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}
