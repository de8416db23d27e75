import CastlineKit
import Foundation
import StagePlugins
import TestSupport
import Testing

/// `file: { loop: true }` plays a short file again and again as one stream: each
/// test loops a 2 s H.264/AAC file well past its end and judges what came out.
@Suite("Looping a file", .serialized, .timeLimit(.minutes(3)), .noGStreamerCriticals)
struct FileLoopTests {
    /// A scratch folder holding a 2 s mp4 (320x240 30 fps H.264, 48 kHz stereo AAC);
    /// `bFrames`: its video reorders frames, so its first dts come before its start.
    final class Scratch {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("castline-loop-\(UUID().uuidString)")
        var media: String { folder.appendingPathComponent("two.mp4").path }
        func file(_ name: String) -> String { folder.appendingPathComponent(name).path }

        init(bFrames: Bool = false) throws {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let ffmpeg = Process()
            ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
            ffmpeg.arguments = ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-t", "2",
                                "-c:v", "libx264", "-preset", bFrames ? "medium" : "ultrafast", "-bf", bFrames ? "3" : "0",
                                "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", media]
            try ffmpeg.run()
            ffmpeg.waitUntilExit()
            try #require(ffmpeg.terminationStatus == 0, "ffmpeg could not make the test file")
        }

        deinit { try? FileManager.default.removeItem(at: folder) }
    }

    /// What a run reported and how it ended.
    struct Outcome {
        var end: PipelineRunner.Outcome
        var events: [RunEvent]

        var failures: [String] {
            events.compactMap { event in
                switch event.kind {
                case .failure(let text), .warning(let text): text
                default: nil
                }
            }
        }

        /// Stats positions, per stream, with when each was reported: the stream time, which
        /// an encoder's 1000-hour offset (x264enc's video, not the audio) does not move.
        func positions(_ stream: StreamKind) -> [(time: Date, position: Double)] {
            events.compactMap { event in
                guard case .stats(let sample) = event.kind, sample.stream == stream,
                      let position = sample.figures["position_s"] else { return nil }
                return (event.time, position)
            }
        }

        /// The largest difference between the audio and video positions reported together.
        var largestDrift: (drift: Double, pairs: Int) {
            let video = positions(.video)
            var drift = 0.0, pairs = 0
            for audio in positions(.audio) {
                guard let nearest = video.min(by: {
                    abs($0.time.timeIntervalSince(audio.time)) < abs($1.time.timeIntervalSince(audio.time))
                }), abs(nearest.time.timeIntervalSince(audio.time)) < 0.2 else { continue }
                drift = max(drift, abs(nearest.position - audio.position))
                pairs += 1
            }
            return (drift, pairs)
        }
    }

    /// Runs `yaml` for `seconds`, then stops it as Ctrl-C does.
    func run(_ yaml: String, for seconds: Double) async throws -> Outcome {
        let runner = try PipelineRunner(spec: try loadSpec(yaml), registry: .builtin)
        // The time counts from the first `playing`: a start slowed by a busy machine takes none of it.
        let (playing, reached) = AsyncStream.makeStream(of: Void.self)
        let events = Task {
            var seen: [RunEvent] = []
            for await event in runner.events {
                seen.append(event)
                if case .stateChanged(_, .playing) = event.kind { reached.finish() }
            }
            reached.finish()
            return seen
        }
        try await runner.start()
        for await _ in playing {}
        try await Task.sleep(for: .seconds(seconds))
        await runner.stop()
        let end = await runner.wait()
        return Outcome(end: end, events: await events.value)
    }

    /// A recording of the looped file holds `least` seconds or more of audio and of
    /// video, starting together, with no packet gap over 50 ms and no timestamp twice.
    /// The figures are printed. `reordered` (B-frames): gaps are judged up to the last
    /// decoding time, since the stop cuts the stream in decoding order and the last frame
    /// written may be shown after reordered frames that were not.
    func expectUnbroken(_ path: String, least: Double, reordered: Bool = false,
                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(FileManager.default.fileExists(atPath: path), "the recording was not finished", sourceLocation: sourceLocation)
        let times = try packetTimes(path)
        let decoded = reordered ? try packetTimes(path, field: "dts_time") : [:]
        for stream in ["audio", "video"] {
            var packets = try #require(times[stream], "no \(stream) in \(path)", sourceLocation: sourceLocation)
            if let last = decoded[stream]?.max() { packets = packets.filter { $0 <= last + 0.0005 } }
            let span = (packets.last ?? 0) - (packets.first ?? 0)
            print("loop \(URL(fileURLWithPath: path).lastPathComponent) \(stream): \(span) s (\(Int(span / 2)) passes of 2 s),"
                  + " largest gap \(largestGap(packets)) s, first at \(packets.first ?? 0) s")
            #expect(span >= least, "\(stream): \(span) s", sourceLocation: sourceLocation)
            #expect(largestGap(packets) < 0.05, "\(stream) gap \(largestGap(packets)) s", sourceLocation: sourceLocation)
            #expect(Set(packets).count == packets.count, "\(stream): a timestamp twice", sourceLocation: sourceLocation)
        }
        let audio = times["audio"]?.first ?? 0, video = times["video"]?.first ?? 0
        #expect(abs(audio - video) < 0.05, "audio starts at \(audio) s, video at \(video) s", sourceLocation: sourceLocation)
    }

    /// The stats positions of audio and video, reported together, stay within 0.1 s; printed.
    func expectInStep(_ outcome: Outcome, sourceLocation: SourceLocation = #_sourceLocation) {
        let (drift, pairs) = outcome.largestDrift
        print("loop: audio and video positions at most \(drift) s apart over \(pairs) reports")
        #expect(pairs >= 3 && drift < 0.1, "audio and video positions \(drift) s apart (\(pairs) reports)",
                sourceLocation: sourceLocation)
    }

    @Test("5 s of a 2 s file in an .mkv, audio and video unbroken and in step", arguments: [
        ("decoded and re-encoded", "{ encode: { video: {}, audio: {} } }, { stats: {} }"),
        ("parsed, never decoded", "{ stats: {} }"),
    ])
    func intoAFile(_ way: String, stages: String) async throws {
        let scratch = try Scratch()
        let output = scratch.file("\(way.prefix(6)).mkv")
        let outcome = try await run("""
            version: 1
            name: loop
            source: { file: { path: "\(scratch.media)", loop: true } }
            stages: [ \(stages) ]
            sinks: [ { file: { path: "\(output)", sync: true } } ]
            """, for: 5)
        #expect(outcome.end == .stopped)
        #expect(outcome.failures.isEmpty, "\(outcome.failures)")
        try expectUnbroken(output, least: 4.5)
        expectInStep(outcome)
    }

    @Test("decoded to a clocked sink: the positions run on with the clock, together, pass after pass")
    func decodedKeepsTime() async throws {
        let scratch = try Scratch()
        let outcome = try await run("""
            version: 1
            name: loop
            source: { file: { path: "\(scratch.media)", loop: true } }
            stages: [ { stats: {} } ]
            sinks: [ { null: { decode: true } } ]
            """, for: 5)
        #expect(outcome.end == .stopped)
        #expect(outcome.failures.isEmpty, "\(outcome.failures)")
        for stream in [StreamKind.audio, .video] {
            let positions = outcome.positions(stream).map(\.position)
            // Played at the pace of the clock: past the first passes, but not run away.
            #expect((positions.last ?? 0) > 4 && (positions.last ?? 0) < 9, "\(stream): \(positions)")
            #expect(zip(positions, positions.dropFirst()).allSatisfy { $1 >= $0 }, "\(stream): \(positions)")
        }
        expectInStep(outcome)
    }

    @Test("as fast as it goes: many passes in a few seconds, one unbroken recording")
    func manyPassesUnpaced() async throws {
        let scratch = try Scratch()
        let output = scratch.file("fast.mkv")
        let outcome = try await run("""
            version: 1
            name: loop
            source: { file: { path: "\(scratch.media)", loop: true } }
            sinks: [ { file: "\(output)" } ]
            """, for: 3)
        #expect(outcome.end == .stopped)
        #expect(outcome.failures.isEmpty, "\(outcome.failures)")
        // Ten passes at the very least; on this kind of machine it is dozens.
        try expectUnbroken(output, least: 20)
        #expect(!outcome.events.contains { if case .notice(let text) = $0.kind { text.contains("encoded again") } else { false } })
    }

    @Test("a stage that decodes what the file sink would keep as it came: the recording is encoded again, and said so")
    func reencodingSaid() async throws {
        let scratch = try Scratch()
        let outcome = try await run("""
            version: 1
            name: loop
            source: { file: { path: "\(scratch.media)", loop: true } }
            stages: [ { gain: { db: -6 } } ]
            sinks: [ { file: "\(scratch.file("gained.mkv"))" } ]
            """, for: 0.5)
        let said = outcome.events.compactMap { if case .notice(let text) = $0.kind { text } else { nil } }
        #expect(said.contains("sinks[0].file: the audio came encoded, and a stage decodes it (to read or change it): encoded again here"),
                "\(said)")
    }

    @Test("B-frames into .mp4: the first pass's early dts are not clamped, dts only ever go on")
    func bFramesIntoMP4() async throws {
        let scratch = try Scratch(bFrames: true)
        let output = scratch.file("bframes.mp4")
        let outcome = try await run("""
            version: 1
            name: loop
            source: { file: { path: "\(scratch.media)", loop: true } }
            sinks: [ { file: { path: "\(output)", sync: true } } ]
            """, for: 5)
        #expect(outcome.end == .stopped)
        #expect(outcome.failures.isEmpty, "\(outcome.failures)")
        try expectUnbroken(output, least: 4.5, reordered: true)
        let video = try #require(try packetTimes(output)["video"])
        let dts = try #require(try packetTimes(output, field: "dts_time")["video"])
        print("loop bframes.mp4: first video dts \(dts.first ?? 0) s, first pts \(video.first ?? 0) s")
        // The reordered frames' dts lie before their pts, the first pass's too.
        #expect((dts.first ?? 0) < (video.first ?? 0), "first dts \(dts.first ?? 0) s, first pts \(video.first ?? 0) s")
        let backwards = zip(dts, dts.dropFirst()).filter { $1 <= $0 }
        #expect(backwards.isEmpty, "video dts stand still or go back: \(backwards.prefix(5))")
    }
}
