import CastlineKit
import Foundation
import StagePlugins
import RunTestSupport
import TestSupport
import Testing

@Suite("Spec diff: what a swap keeps")
struct SpecDiffTests {
    let base = """
        version: 1
        name: show
        source: { test: { audio: {} } }
        stages: [ { delay: { max: 1m } }, { stats: {} } ]
        sinks: [ { null: {} }, { file: /tmp/a.wav } ]
        """

    @Test("a stage added after the delay keeps the source and the delay; one line says so")
    func stageAdded() throws {
        let old = try loadSpec(base)
        let new = try loadSpec(base.replacingOccurrences(of: "{ stats: {} }", with: "{ gst: { description: \"volume volume=0.5\", stream: audio } }, { stats: {} }"))
        let diff = SpecDiff(old: old, new: new)
        #expect(diff.keptChain == 2)
        #expect(diff.keptSinks == [0, 1])
        #expect(diff.changes == ["stages[1] gst added"])
    }

    @Test("a new source replaces the whole chain; unchanged sinks stay")
    func sourceChanged() throws {
        let old = try loadSpec(base)
        let new = try loadSpec(base.replacingOccurrences(of: "audio: {}", with: "audio: { tone: 440 }"))
        let diff = SpecDiff(old: old, new: new)
        #expect(diff.keptChain == 0)
        #expect(diff.keptSinks == [0, 1])
        #expect(diff.changes == ["source test changed"])
    }

    @Test("a changed sink is rebuilt and said to reconnect; the same file is no change; a new name is refused")
    func sinksAndName() throws {
        let old = try loadSpec(base)
        let moved = SpecDiff(old: old, new: try loadSpec(base.replacingOccurrences(of: "/tmp/a.wav", with: "/tmp/b.wav")))
        #expect(moved.keptChain == 3)
        #expect(moved.keptSinks == [0])
        #expect(moved.changes == ["sinks[1] file changed (reconnects)"])
        #expect(SpecDiff(old: old, new: old).isEmpty)
        let renamed = SpecDiff(old: old, new: try loadSpec(base.replacingOccurrences(of: "name: show", with: "name: other")))
        #expect(renamed.refusal != nil)
    }

    @Test("a stage that takes its new options in place is kept; only that is nothing to rebuild")
    func adjustedInPlace() throws {
        let old = try loadSpec(base)
        let new = try loadSpec(base.replacingOccurrences(of: "{ max: 1m }", with: "{ max: 1m, initial: 20s }"))
        let adjusted = SpecDiff(old: old, new: new) { $0 == 1 }
        #expect(adjusted.keptChain == 3 && adjusted.adjustedChain == [1])
        #expect(adjusted.changes == ["stages[0] delay changed in place"])
        #expect(adjusted.rebuildsNothing)
        let rebuilt = SpecDiff(old: old, new: new)
        #expect(rebuilt.keptChain == 1 && rebuilt.adjustedChain.isEmpty)
        #expect(rebuilt.changes == ["stages[0] delay changed"])
        #expect(!rebuilt.rebuildsNothing)
    }
}

@Suite("Swapping parts of a running pipeline", .serialized, .timeLimit(.minutes(2)), .noGStreamerCriticals)
struct SwapTests {
    func spec(pattern: String, tone: Int, path: String, extraStage: String = "") throws -> PipelineSpec {
        try loadSpec("""
            version: 1
            name: swap
            source: { test: { video: { width: 320, height: 240, fps: 30, pattern: \(pattern) }, audio: { tone: \(tone) } } }
            stages: [ \(extraStage) ]
            sinks: [ { file: \(path) } ]
            """)
    }

    @Test("a new source is swapped in: the recording runs on with no frame and no sound lost at the join, and the swap is reported")
    func sourceSwap() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-swap-\(UUID().uuidString).mkv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        // A stats stage says how far the media has got (position_s), for the waits.
        let stats = "{ stats: { every: 100ms } }"
        let runner = try PipelineRunner(spec: try spec(pattern: "smpte", tone: 440, path: path, extraStage: stats), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        #expect(await recorder.reached(.playing))
        #expect(await recorder.played(to: 1), "no second of media before the join")
        let report = try await runner.swap(to: try spec(pattern: "ball", tone: 880, path: path, extraStage: stats),
                                           registry: .builtin, origin: "new.yaml")
        #expect(report.changes == ["source test changed"])
        #expect(report.took < .seconds(1))
        #expect(await recorder.played(to: 2.6), "media after the join")
        await runner.stop()
        #expect(await runner.wait() == .stopped)
        let seen = await recorder.all()
        #expect(seen.contains { if case .reloaded = $0.kind { true } else { false } })
        #expect(!seen.contains { if case .failure = $0.kind { true } else { false } })
        // The rebuilt stats stage counts on from the one it replaced: totals since the start, not since the swap.
        let reloadedAt = try #require(seen.firstIndex { if case .reloaded = $0.kind { true } else { false } })
        func buffers(_ events: ArraySlice<RunEvent>) -> [Double] {
            events.compactMap { event in
                if case .stats(let sample) = event.kind, sample.stream == .audio { sample.figures["buffers"] } else { nil }
            }
        }
        let before = try #require(buffers(seen[..<reloadedAt]).max()), after = buffers(seen[reloadedAt...])
        #expect(after.count > 5 && after.allSatisfy { $0 >= before }, "before the swap \(before) buffers; after \(after)")
        let times = try packetTimes(path)
        let video = try #require(times["video"]), audio = try #require(times["audio"])
        // Each stream carries on from where the same stream of the old source ended: no frame and
        // no AAC frame (1024 samples, 21.3 ms) is lost at the join, every run.
        #expect(largestGap(video) < 1.0 / 30 + 0.0015, "video gap \(largestGap(video)) s")
        // (Matroska keeps milliseconds: 21 or 22 ms apart.)
        #expect(largestGap(audio) < 1024.0 / 48000 + 0.0015, "audio gap \(largestGap(audio)) s")
        #expect((video.last ?? 0) - (video.first ?? 0) > 2.5)
    }
}

extension SwapTests {
    @Test("a stage added after a delay: the delay and its history stay, the audio runs on")
    func stageAddedAfterDelay() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-swap-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        func spec(_ extra: String) throws -> PipelineSpec {
            try loadSpec("""
                version: 1
                name: swap
                source: { test: { audio: { beep: 0s } } }
                stages: [ { delay: { initial: 1s, max: 1m } }\(extra) ]
                sinks: [ { file: \(path) } ]
                """)
        }
        let runner = try PipelineRunner(spec: try spec(""), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        // Swapped once the delay holds history past its start.
        let grown = await recorder.first(within: .seconds(15)) { event in
            if case .stage(let stageEvent) = event.kind, stageEvent.name == "available-delay-changed" {
                (stageEvent.fields["available_s"] ?? 0) >= 1.5
            } else { false }
        }
        #expect(grown != nil)
        let report = try await runner.swap(
            to: try spec(", { gst: { description: \"volume volume=0.5\", stream: audio } }"), registry: .builtin, origin: "new.yaml")
        #expect(report.changes == ["stages[1] gst added"])
        try await Task.sleep(for: .milliseconds(1500))  // audio recorded after the swap
        await runner.stop()
        #expect(await runner.wait() == .stopped)
        let seen = await recorder.all()
        #expect(!seen.contains { if case .failure = $0.kind { true } else { false } })
        // The history kept growing through the swap: never back near zero once past a second.
        let available = seen.compactMap { if case .stage(let event) = $0.kind, event.name == "available-delay-changed" { event.fields["available_s"] } else { nil } }
        #expect(available.count >= 3)
        #expect(zip(available, available.dropFirst()).allSatisfy { $1 >= $0 }, "available delay \(available)")
        let times = try packetTimes(path)
        let audio = try #require(times["audio"])
        #expect(largestGap(audio) < 0.05, "audio gap \(largestGap(audio)) s")
        // About 4 s ran, 1 s of it held back by the delay.
        #expect(((audio.last ?? 0) - (audio.first ?? 0)) > 2.5)
    }
}

extension SwapTests {
    @Test("a changed sink is finished and replaced; a file that cannot be built is refused and the run goes on")
    func sinkChangedAndRefusal() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("castline-swap-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func spec(_ file: String, stage: String = "") throws -> PipelineSpec {
            try loadSpec("""
                version: 1
                name: swap
                source: { test: { audio: { beep: 0s } } }
                stages: [ \(stage) ]
                sinks: [ { null: {} }, { file: \(folder.appendingPathComponent(file).path) } ]
                """)
        }
        let runner = try PipelineRunner(spec: try spec("first.wav"), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        #expect(await recorder.reached(.playing))
        try await Task.sleep(for: .milliseconds(1200))  // audio recorded into first.wav
        await #expect(throws: SwapRefused.self) {
            try await runner.swap(to: try spec("first.wav", stage: "{ gst: { description: \"no-such-element\" } }"), registry: .builtin, origin: "bad.yaml")
        }
        #expect(await runner.state == .playing)
        let report = try await runner.swap(to: try spec("second.wav"), registry: .builtin, origin: "new.yaml")
        #expect(report.changes == ["sinks[1] file changed (reconnects)"])
        try await Task.sleep(for: .milliseconds(1200))  // audio recorded into second.wav
        await runner.stop()
        #expect(await runner.wait() == .stopped)
        let seen = await recorder.all()
        #expect(seen.contains { if case .reloadFailed(let origin, _) = $0.kind { origin == "bad.yaml" } else { false } })
        for (file, least) in [("first.wav", 1.0), ("second.wav", 0.9)] {
            let audio = try #require(try packetTimes(folder.appendingPathComponent(file).path)["audio"], "\(file)")
            #expect(((audio.last ?? 0) - (audio.first ?? 0)) > least, "\(file)")
        }
    }
}

extension SwapTests {
    @Test("the source and every sink replaced at once: the new sink prerolls on the new live source, records it, and the stop is clean")
    func everythingReplaced() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-swap-\(UUID().uuidString).wav").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        let runner = try PipelineRunner(spec: try loadSpec("""
            version: 1
            name: swap
            source: { test: { audio: { tone: 440 } } }
            stages: [ { stats: { every: 100ms } } ]
            sinks: [ { null: {} } ]
            """), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        #expect(await recorder.reached(.playing))
        let report = try await runner.swap(to: try loadSpec("""
            version: 1
            name: swap
            source: { test: { audio: { tone: 880 } } }
            stages: [ { stats: { every: 100ms } } ]
            sinks: [ { file: \(path) } ]
            """), registry: .builtin, origin: "new.yaml")
        #expect(report.changes == ["source test changed", "sinks[0]: null → file"])
        // The new stats stage counts what flows to the new sink: a second of it.
        let flowed = await recorder.first { event in
            guard case .stats(let sample) = event.kind, sample.stage.hasPrefix("stats") else { return false }
            return (sample.figures["buffers"] ?? 0) >= 48
        }
        #expect(flowed != nil, "no media after the swap")
        await runner.stop()
        #expect(await runner.wait() == .stopped)
        let audio = try #require(try packetTimes(path)["audio"])
        #expect(((audio.last ?? 0) - (audio.first ?? 0)) > 0.5)
    }
}

extension SwapTests {
    @Test("""
        a swap that changes the recorded format (a new encoder bitrate: new codec data) ends a Matroska recording there, \
        finished, playable and named at once, with a warning; the run goes on, and its verdict says the file is not the whole run
        """)
    func formatChangeEndsRecording() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-swap-\(UUID().uuidString).mkv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        func spec(_ bitrate: String) throws -> PipelineSpec {
            try loadSpec("""
                version: 1
                name: swap
                source: { test: { video: { width: 320, height: 240 }, audio: {} } }
                stages: [ { encode: { video: { bitrate: \(bitrate) } } }, { stats: { every: 100ms } } ]
                sinks: [ { null: {} }, { file: \(path) } ]
                """)
        }
        let runner = try PipelineRunner(spec: try spec("1000k"), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        #expect(await recorder.played(to: 1), "no second of media before the swap")
        _ = try await runner.swap(to: try spec("2000k"), registry: .builtin, origin: "new.yaml")
        let warned = await recorder.first { event in
            if case .warning(let text) = event.kind { text.contains("which a .mkv file cannot take mid-file") } else { false }
        }
        #expect(warned != nil)
        #expect(await recorder.played(to: 2), "the run went on after the recording ended")
        // Whole from its end on: named so then (as its end reaches the file), not left as .partial until the run ends.
        #expect(await waitUntil { () async -> Bool in
            FileManager.default.fileExists(atPath: path) && !FileManager.default.fileExists(atPath: path + ".partial")
        })
        await runner.stop()
        let outcome = await runner.wait()
        guard case .failed(let reason) = outcome else {
            Issue.record("the run ended \(outcome), with the recording cut at the format change")
            return
        }
        #expect(reason.contains("wrote \(path)") && reason.contains("only up to where a stream changed format"), "\(reason)")
        let times = try packetTimes(path)
        let video = try #require(times["video"]), audio = try #require(times["audio"])
        #expect((video.last ?? 0) > 0.9 && (audio.last ?? 0) > 0.9, "video to \(video.last ?? 0) s, audio to \(audio.last ?? 0) s")
    }
}

extension SwapTests {
    @Test("a recording added mid-run starts its picture on a keyframe, not on the frames that depend on an earlier one")
    func addedRecordingStartsOnAKeyframe() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("castline-added-\(UUID().uuidString).mkv").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        func spec(recording: Bool) throws -> PipelineSpec {
            try loadSpec("""
                version: 1
                name: swap
                source: { test: { video: { width: 320, height: 240 }, audio: {} } }
                stages: [ { encode: { video: { keyframe-interval: 2s } } }, { stats: { every: 100ms } } ]
                sinks: [ { null: {} }\(recording ? ", { file: \(path) }" : "") ]
                """)
        }
        let runner = try PipelineRunner(spec: try spec(recording: false), registry: .builtin)
        let recorder = RunRecorder(runner)
        try await runner.start()
        // Half way through a 2 s group of pictures.
        #expect(await recorder.played(to: 1), "no second of media before the swap")
        _ = try await runner.swap(to: try spec(recording: true), registry: .builtin, origin: "new.yaml")
        #expect(await recorder.played(to: 2.5), "the run went on")
        await runner.stop()
        _ = await runner.wait()
        let probe = Process()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
        probe.arguments = ["-v", "error", "-select_streams", "v", "-show_entries", "packet=flags", "-of", "csv=p=0", path]
        let pipe = Pipe()
        probe.standardOutput = pipe
        try probe.run()
        let flags = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n")
        probe.waitUntilExit()
        #expect(flags.count > 10, "\(flags.count) video packets")
        #expect(flags.first?.hasPrefix("K") == true, "the first video packets: \(flags.prefix(3))")
    }
}

extension RunRecorder {
    /// Whether a stats stage said the video has played `seconds` of its media (`position_s`).
    func played(to seconds: Double) async -> Bool {
        await first { event in
            guard case .stats(let sample) = event.kind, sample.stream == .video else { return false }
            return (sample.playPosition ?? 0) >= seconds
        } != nil
    }
}
