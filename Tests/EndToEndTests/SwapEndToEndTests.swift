import Foundation
import LocalIngest
import Testing
import TestSupport

/// `castline run FILE --watch` against the real ingest: the pipeline file is edited
/// while castline publishes over RTMPS, and what nginx wrote is judged with ffprobe.
@Suite("Swapping by editing the file, end to end", .serialized, .timeLimit(.minutes(3)))
struct SwapEndToEndTests {
    static let key = "sw4p-\(UInt32.random(in: 100_000...999_999))-key"

    /// Writes `text` as an editor that saves by renaming a new file over the old one does.
    static func save(_ text: String, to path: String) throws {
        let temporary = path + ".~new"
        try Data(text.utf8).write(to: URL(fileURLWithPath: temporary))
        guard rename(temporary, path) == 0 else { throw ProbeError(message: "rename failed: \(errno)") }
    }

    static func broadcast(source: String, endpoints: IngestEndpoints) -> String {
        """
        version: 1
        name: swapped
        source: \(source)
        stages: [ { encode: { video: {}, audio: {} } } ]
        sinks:
          - rtmp: { url: "\(endpoints.rtmpsURL)", key: "${CASTLINE_TEST_KEY}", ca-file: "\(endpoints.caFile)" }
        """
    }

    @Test("test pattern → a file over RTMPS: one publish for the whole run, HLS without a discontinuity or a gap")
    func sourceSwapKeepsThePublish() async throws {
        try await withIngest { _, endpoints in
            let scratch = try Scratch()
            let clip = scratch.file("clip.mp4")
            let made = try await ChildProcess.run("/usr/bin/ffmpeg", [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30", "-f", "lavfi", "-i",
                "sine=frequency=440:sample_rate=48000", "-t", "25", "-c:v", "libx264", "-preset", "ultrafast",
                "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "2", clip,
            ])
            #expect(made.status == 0, "\(made.stderr)")
            let pipeline = try scratch.write("live.yaml", Self.broadcast(source: "{ test: {} }", endpoints: endpoints))
            let process = try Castline.start(["run", pipeline, "--watch"],
                                             environment: Castline.strict.merging(["CASTLINE_TEST_KEY": Self.key]) { $1 })
            let hls = endpoints.published(key: Self.key)
            #expect(await hls.waitForSegments(2, timeout: .seconds(20)), "\(process.standardError)")
            // A typo first: refused, and the broadcast goes on.
            try Self.save("version: 1\nsource: { tset: {} }\n", to: pipeline)
            #expect(await Castline.waitFor("not applied", in: process, timeout: .seconds(5)), "\(process.standardError)")
            try Self.save(Self.broadcast(source: "{ file: { path: \"\(clip)\" } }", endpoints: endpoints), to: pipeline)
            #expect(await Castline.waitFor("reloaded", in: process, timeout: .seconds(10)), "\(process.standardError)")
            let before = hls.segments.count
            #expect(await hls.waitForSegments(before + 2, timeout: .seconds(20)), "no segments after the swap")
            let status = await Castline.interrupt(process)
            #expect(status == 0, "\(process.standardError)")
            #expect(!process.standardError.contains(Self.key))
            #expect(Castline.glibWarnings(in: process.standardError).isEmpty, "\(process.standardError)")

            let playlist = try String(contentsOfFile: hls.directory + "/" + Self.key + ".m3u8", encoding: .utf8)
            // nginx-rtmp marks the first fragment of a publish; any other mark is a break in the stream.
            let marks = playlist.components(separatedBy: "#EXT-X-DISCONTINUITY").count - 1
            let leading = playlist.range(of: "#EXT-X-DISCONTINUITY").map { playlist[..<$0.lowerBound].contains("#EXTINF") == false } ?? false
            #expect(marks - (leading ? 1 : 0) == 0, "\(playlist)")
            let packets = try await hls.videoPackets().map(\.time).sorted()
            let gaps = zip(packets, packets.dropFirst()).map { $1 - $0 }
            #expect(packets.count > 150)
            let largest = gaps.indices.max { gaps[$0] < gaps[$1] }
            #expect((gaps.max() ?? 1) < 2.0 / 30,
                    "largest gap between frames \(gaps.max() ?? -1) s, after \(largest.map { packets[$0] } ?? -1) s of \(packets.last ?? -1) s")
            // nginx-rtmp writes one access-log line per RTMP session when it ends.
            let sessions = try String(contentsOfFile: endpoints.accessLogPath, encoding: .utf8)
                .split(separator: "\n").filter { $0.contains(Self.key) }
            #expect(sessions.count == 1, "\(sessions)")
        }
    }

}

extension SwapEndToEndTests {
    @Test("listening with a delay, a gst audio filter is added: audio goes on through it, the delay and its history stay")
    func stageAddedWhileListening() async throws {
        try await withIngest { _, endpoints in
            let key = "swaplisten\(UInt16.random(in: 1000...9999))"
            let publisher = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-v", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "60",
                "-c:a", "aac", "-b:a", "128k", "-f", "flv", endpoints.rtmpPublishURL(key: key),
            ])
            try publisher.start()
            defer { publisher.signal(SIGKILL) }
            #expect(await endpoints.published(key: key).waitForSegments(3, timeout: .seconds(30)))
            let scratch = try Scratch()
            let wav = scratch.file("listen.wav"), events = scratch.file("events.jsonl")
            func listening(_ extra: String) -> String {
                """
                version: 1
                name: listening
                source: { hls: { url: "\(endpoints.hlsPlaylistURL(key: key))" } }
                stages: [ { audio-only: {} }, { delay: { initial: 2s, max: 1m } }\(extra), { stats: {} } ]
                sinks: [ { null: {} }, { file: { path: "\(wav)", sync: true } } ]
                """
            }
            let pipeline = try scratch.write("listen.yaml", listening(""))
            let process = try Castline.start(["run", pipeline, "--watch", "--stats-json", events])
            defer { process.signal(SIGKILL) }
            #expect(await Castline.waitFor("delay 2.0 s", in: process, timeout: .seconds(20)), "\(process.standardError)")
            // A stream younger than the hold-back plays once its media's time comes, a moment later.
            #expect(await Castline.waitFor("\nplaying", in: process, timeout: .seconds(10)), "\(process.standardError)")
            // Where what is heard lies in the stream, as the stats stage last said (0 before it has).
            func heard() -> Double {
                let text = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
                return jsonLines(text, growing: true).last { $0["event"] as? String == "stats" }?["position_s"] as? Double ?? 0
            }
            // Three seconds heard before the swap, four after it.
            #expect(await waitUntil(.seconds(15)) { heard() >= 3 }, "\(process.standardError)")
            try Self.save(listening(", { gst: { description: \"volume volume=0.5\", stream: audio } }"), to: pipeline)
            #expect(await Castline.waitFor("reloaded", in: process, timeout: .seconds(10)), "\(process.standardError)")
            let swappedAt = heard()
            #expect(await waitUntil(.seconds(15)) { heard() >= swappedAt + 4 }, "\(process.standardError)")
            #expect(await Castline.interrupt(process) == 0, "\(process.standardError)")
            #expect(process.standardError.contains("stages[2] gst added"), "\(process.standardError)")

            // The history kept growing through the swap, and the delay stayed where it was.
            let lines = jsonLines(try String(contentsOfFile: events, encoding: .utf8), growing: true)
            let available = lines.filter { $0["event"] as? String == "available-delay-changed" }.compactMap { $0["available_s"] as? Double }
            #expect(available.count >= 4)
            #expect(zip(available, available.dropFirst()).allSatisfy { $1 >= $0 }, "available delay \(available)")
            // Once the initial delay is reached (it fills from 0), it stays put through the swap.
            let delays = lines.compactMap { $0["delay_s"] as? Double }.drop { abs($0 - 2) >= 0.01 }
            #expect(delays.count >= 4 && delays.allSatisfy { abs($0 - 2) < 0.01 }, "delay \(Array(delays))")
            // Audio all along, at half the level once the filter is in.
            let samples = try await monoSamples(ofWAV: wav, scratch: scratch)
            func rms(_ range: Range<Int>) -> Double {
                let window = samples[range.clamped(to: samples.indices)]
                return (window.reduce(0) { $0 + Double($1 * $1) } / Double(max(window.count, 1))).squareRoot()
            }
            let second = 48_000
            #expect(samples.count > 6 * second, "recorded \(Double(samples.count) / Double(second)) s")
            let before = rms(second..<(2 * second)), after = rms((samples.count - 2 * second)..<(samples.count - second))
            #expect(abs(after / before - 0.5) < 0.05, "level after / before \(after / before)")
            // No silent hole anywhere: every 100 ms holds the tone.
            let holes = stride(from: 0, to: samples.count - 4_800, by: 4_800).filter { rms($0..<($0 + 4_800)) < before * 0.3 }
            #expect(holes.isEmpty, "silent at \(holes.map { Double($0) / Double(second) }) s")
        }
    }
}

extension SwapEndToEndTests {
    @Test("a delay stage's options change: it keeps its history and takes the new delay at once; rebuilt, the old one stops reporting")
    func delayStageChanged() async throws {
        try await withPublishedTone(key: "swapdelay", segments: 3) { endpoints, key in
            let scratch = try Scratch()
            let events = scratch.file("events.jsonl")
            func listening(initial: String, before: String = "") -> String {
                """
                version: 1
                name: listening
                source: { hls: { url: "\(endpoints.hlsPlaylistURL(key: key))" } }
                stages: [ { audio-only: {} }\(before), { delay: { initial: \(initial), max: 1m } }, { stats: { every: 500ms } } ]
                sinks: [ { null: {} } ]
                """
            }
            let file = try scratch.write("listen.yaml", listening(initial: "1s"))
            try await ControlAPITests.withControl(["run", file, "--stats-json", events]) { api, _ in
                let filled = try await api.status(until: { ($0["available_delay_s"] as? Double ?? 0) >= 5 }, timeout: .seconds(30))
                let held = try #require(filled["available_delay_s"] as? Double, "\(filled)")

                let adjusted = try await api.request("POST", "/swap", body: listening(initial: "4s"), contentType: "application/yaml")
                #expect(adjusted.status == 200, "\(adjusted.text)")
                let changes = adjusted.json?["changes"] as? [String] ?? []
                #expect(changes == ["stages[1] delay changed in place"], "\(adjusted.text)")
                #expect((adjusted.json?["took_ms"] as? Int ?? 9_999) < 100, "\(adjusted.text)")
                // At once, from the history it held: no refill from 0.
                let moved = try await api.status(until: { abs(($0["delay_s"] as? Double ?? 0) - 4) < 0.05 }, timeout: .seconds(3))
                #expect(abs((moved["delay_s"] as? Double ?? 0) - 4) < 0.05, "\(moved)")
                #expect((moved["available_delay_s"] as? Double ?? 0) >= held, "history \(moved["available_delay_s"] ?? "none"), was \(held)")

                // A stage added before it: the delay is rebuilt, and only the new one reports.
                let rebuilt = try await api.request("POST", "/swap", body: listening(initial: "0s", before: ", { stats: { name: early } }"),
                                                    contentType: "application/yaml")
                #expect(rebuilt.status == 200, "\(rebuilt.text)")
                let reloadedAt = Date()
                _ = try await api.status(until: { _ in Date().timeIntervalSince(reloadedAt) > 4 }, timeout: .seconds(6))
            }
            let lines = jsonLines(try String(contentsOfFile: events, encoding: .utf8), growing: true)
            let reloads = lines.compactMap { $0["event"] as? String == "reloaded" ? DelayListener.time($0) : nil }
            let second = try #require(reloads.dropFirst().first, "\(reloads)")
            let after = lines.filter { $0["event"] as? String == "stats" && $0["delay_s"] != nil }
                .compactMap(DelayListener.time).filter { $0 > second.addingTimeInterval(1) }
            let span = (after.last ?? second).timeIntervalSince(second.addingTimeInterval(1))
            // One delay stage reports once a second; the old one beside it would double that.
            #expect(Double(after.count) <= span + 1.5, "\(after.count) delay samples in \(span) s")
            #expect(after.count >= 2, "the new delay stage did not report: \(after.count)")
        }
    }
}

extension SwapEndToEndTests {
    @Test("a gst audio filter added after the encoder: the sound is re-encoded from the join, and the recording's audio never goes back in time there")
    func reencodedAudioGoesOn() async throws {
        let scratch = try Scratch()
        let recording = scratch.file("joined.ts"), events = scratch.file("events.jsonl")
        func pipeline(_ extra: String) -> String {
            """
            version: 1
            name: joined
            source: { test: { video: { width: 640, height: 360, fps: 30 }, audio: { tone: 660 } } }
            stages:
              - encode: { video: { bitrate: 1M, keyframe-interval: 1s }, audio: { codec: aac, bitrate: 128k } }
              - stats: { every: 250ms }\(extra)
            sinks: [ { file: { path: "\(recording)" } } ]
            """
        }
        let file = try scratch.write("joined.yaml", pipeline(""))
        let process = try Castline.start(["run", file, "--watch", "--stats-json", events])
        defer { process.signal(SIGKILL) }
        func played() -> Double {
            let text = (try? String(contentsOfFile: events, encoding: .utf8)) ?? ""
            return jsonLines(text, growing: true).last { $0["stream"] as? String == "audio" }?["position_s"] as? Double ?? 0
        }
        #expect(await waitUntil(.seconds(20)) { played() >= 3 }, "\(process.standardError)")
        try Self.save(pipeline("\n  - gst: \"audioecho delay=250000000\""), to: file)
        #expect(await Castline.waitFor("stages[2] gst added", in: process, timeout: .seconds(10)), "\(process.standardError)")
        let swappedAt = played()
        #expect(await waitUntil(.seconds(15)) { played() >= swappedAt + 2 }, "\(process.standardError)")
        #expect(await Castline.interrupt(process) == 0, "\(process.standardError)")
        let probe = try await ChildProcess.run("ffprobe", ["-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time",
                                                           "-of", "csv=p=0", recording])
        let times = probe.stdout.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: CharacterSet(charactersIn: ","))) }
        let back = zip(times, times.dropFirst()).filter { $1 < $0 }
        #expect(times.count > 200 && back.isEmpty, "\(times.count) audio packets; going back at \(back)")
    }
}
