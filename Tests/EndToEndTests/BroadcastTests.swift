import Foundation
import LocalIngest
import Testing

/// Publishing to a real nginx-rtmp behind a real stunnel, judged by ffprobe.
@Suite("castline broadcast, end to end", .serialized, .timeLimit(.minutes(3)))
struct BroadcastTests {
    static let key = "k3y-\(UInt32.random(in: 100_000...999_999))-secret"

    @Test("RTMPS through the local ingest (a CA file given relative to the working folder): h264 yuv420p 720p30 with 2 s keyframes, aac 48 kHz stereo, the length sent; listen rtmp:// plays the ingest's input as it comes")
    func publishesOverRTMPS() async throws {
        try await withIngest { _, endpoints in
            // castline runs in the repository's folder: the CA file's path from there.
            let up = String(repeating: "../", count: URL(fileURLWithPath: Castline.repositoryRoot).pathComponents.count - 1)
            let relativeCA = up + endpoints.caFile.drop { $0 == "/" }
            let environment = Castline.strict.merging(["CASTLINE_TEST_KEY": Self.key]) { $1 }
            async let broadcast = Castline.run([
                "broadcast", endpoints.rtmpsURL, "--key-env", "CASTLINE_TEST_KEY", "--ca-file", relativeCA,
                "--duration", "10s",
            ], environment: environment)
            // A player of the ingest's own input, before its HLS packager: nginx holds the play
            // until the publish starts.
            let scratch = try Scratch()
            let played = scratch.file("played.mkv")
            let listen = try await Castline.run([
                "listen", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--output", "null", "--record", played, "--duration", "3s",
            ], environment: environment, timeout: .seconds(30))
            #expect(listen.status == 0, "\(listen.stderr)")
            let playedMedia = try await ProbedMedia.probe(played)
            #expect(playedMedia.stream("video")?.fields["width"] == "1280" && playedMedia.stream("audio")?.codec == "aac")
            #expect(playedMedia.duration >= 2.5, "played \(playedMedia.duration) s")
            #expect(!listen.stderr.contains(Self.key) && !listen.stdout.contains(Self.key))
            let result = try await broadcast
            #expect(result.status == 0, "\(result.stderr)")
            #expect(Castline.glibWarnings(in: result.stderr).isEmpty, "\(result.stderr)")
            let hls = endpoints.published(key: Self.key)
            let media = try await ProbedMedia.probe(hls.playlistURL)
            let video = try #require(media.stream("video"))
            #expect(video.codec == "h264")
            #expect(video.fields["pix_fmt"] == "yuv420p")
            #expect(video.fields["width"] == "1280" && video.fields["height"] == "720")
            #expect(video.fields["avg_frame_rate"] == "30/1")
            #expect(["High", "Main"].contains(video.fields["profile"] ?? ""))
            let audio = try #require(media.stream("audio"))
            #expect(audio.codec == "aac")
            let packets = try await hls.videoPackets()
            let span = (packets.last?.time ?? 0) - (packets.first?.time ?? 0)
            #expect(abs(span - 10) < 1.0, "published \(span) s")
            let keyframes = packets.filter(\.isKey).map(\.time)
            let gaps = zip(keyframes.dropFirst(), keyframes).map { $0 - $1 }
            #expect(gaps.count >= 3)
            #expect(gaps.allSatisfy { abs($0 - 2) < 0.05 }, "keyframe gaps \(gaps)")
            // The key never shows, even in castline's own summary.
            #expect(!result.stderr.contains(Self.key) && !result.stdout.contains(Self.key))
        }
    }

    @Test("audio 48 kHz stereo AAC, as ingests recommend")
    func audioFormat() async throws {
        try await withIngest { _, endpoints in
            let result = try await Castline.run([
                "broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--audio-only", "--duration", "5s",
            ], environment: ["CASTLINE_TEST_KEY": Self.key])
            #expect(result.status == 0, "\(result.stderr)")
            // A segment file, not the live playlist: ffprobe would wait on a playlist for its long analysis.
            let hls = endpoints.published(key: Self.key)
            let segment = try #require(hls.segments.first)
            let probe = try await ChildProcess.run("/usr/bin/ffprobe", [
                "-v", "error", "-analyzeduration", "10M", "-show_entries", "stream=codec_type,codec_name,sample_rate,channels",
                "-of", "csv=p=0", hls.directory + "/" + segment,
            ])
            #expect(probe.stdout.contains("aac,audio,48000,2") || probe.stdout.contains("audio,aac,48000,2"), "\(probe.stdout)")
            // nginx-rtmp's PMT always declares a video stream; no video packets is what counts.
            let videoPackets = try await ChildProcess.run("/usr/bin/ffprobe", [
                "-v", "error", "-select_streams", "v", "-show_entries", "packet=pts_time",
                "-of", "csv=p=0", hls.directory + "/" + segment,
            ])
            #expect(videoPackets.status == 0)
            #expect(videoPackets.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(videoPackets.stdout)")
        }
    }

    @Test("nginx dies mid-broadcast and comes back: castline reconnects, HLS goes on, one reconnect, no GStreamer warning; down again at the end: exit 1, saying so")
    func reconnects() async throws {
        try await withIngest { server, endpoints in
            let process = try Castline.start([
                "broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--size", "640x360",
            ], environment: Castline.strict.merging(["CASTLINE_TEST_KEY": Self.key]) { $1 })
            let hls = endpoints.published(key: Self.key)
            #expect(await hls.waitForSegments(2, timeout: .seconds(15)))
            await server.stopNginx()
            // Back once castline has seen the connection go, not after a guessed while.
            try #require(await Castline.waitFor("reconnecting", in: process, timeout: .seconds(15)), "\(process.standardError)")
            let before = hls.segments.count
            try await server.startNginx()
            #expect(await hls.waitForSegments(before + 2, timeout: .seconds(30)), "no new segments after nginx came back")
            // Down again when the run ends: what was published is told, and the run fails, for the far end missed the end.
            // Each failed attempt says it: one more than so far is this loss seen.
            let attempts = process.standardError.components(separatedBy: "reconnecting in").count - 1
            await server.stopNginx()
            try #require(await Castline.waitFor("reconnecting in", count: attempts + 1, in: process, timeout: .seconds(15)),
                         "\(process.standardError)")
            let status = await Castline.interrupt(process)
            #expect(status == 1, "\(process.standardError)")
            #expect(process.standardError.contains("error: the connection to \(endpoints.rtmpURL) was lost ")
                    && process.standardError.contains(" s before the end and was not back (published ")
                    && process.standardError.contains("reconnects: 1"), "\(process.standardError)")
            #expect(!process.standardError.contains(Self.key))
            // The keyframe asked for on reconnecting went upstream once as a warning, every time.
            #expect(Castline.glibWarnings(in: process.standardError).isEmpty, "\(process.standardError)")
        }
    }

    @Test("a refused key is one clear error, not an endless retry; one destination of three refusing its key never stops the other two")
    func refusedKey() async throws {
        var options = IngestOptions()
        options.allowedKeys = ["the-right-key", "another-right-key"]
        try await withIngest(options) { _, endpoints in
            // Three destinations from one encode, the middle one refused: said once, the others publish on.
            let scratch = try Scratch()
            let recording = scratch.file("kept.mkv")
            // A fourth whose host does not resolve is left out at the start, and named: the others start without it.
            let three = try await Castline.run([
                "broadcast", endpoints.rtmpURL, endpoints.rtmpURL, endpoints.rtmpURL, "rtmp://castline-no-such-host.invalid/live",
                "--key-env", "GOOD_KEY", "--key-env", "CASTLINE_TEST_KEY", "--key-env", "OTHER_KEY", "--key-env", "GOOD_KEY",
                "--size", "320x240", "--duration", "6s", "--record", recording,
            ], environment: ["GOOD_KEY": "the-right-key", "CASTLINE_TEST_KEY": Self.key, "OTHER_KEY": "another-right-key"],
                timeout: .seconds(30))
            #expect(three.status == 1, "\(three.stderr)")
            #expect(three.stderr.contains("sinks[3].rtmp: cannot resolve castline-no-such-host.invalid: ") && three.stderr.contains(
                "(check the URL); the other 4 sinks go on"), "\(three.stderr)")
            // The run failed, but the recording beside the refused publish is whole: its file says so, not the run.
            #expect(three.stderr.contains("wrote \(recording) ("), "\(three.stderr)")
            #expect(abs(try await ProbedMedia.probe(recording).duration - 6) < 0.2)
            let refusal = "sinks[1].rtmp: the server at \(endpoints.rtmpURL) refused to publish with this stream key (check the key); the other 3 sinks go on"
            #expect(three.stderr.components(separatedBy: refusal).count == 2, "\(three.stderr)")
            #expect(!three.stderr.contains(Self.key))
            // The summary counts each destination that published on its own line (the refused one never did).
            let summary = three.stderr.split(separator: "\n").filter { $0.hasPrefix("  rtmp") }.sorted()
            #expect(summary.map { $0.prefix(8) } == ["  rtmp0:", "  rtmp2:"] && !summary.contains { $0.contains(" 0.00 MB sent") },
                    "\(summary)")
            for key in ["the-right-key", "another-right-key"] {
                try #require(await endpoints.published(key: key).waitForSegments(2, timeout: .seconds(10)))
                let stored = try await storedBitrate(in: endpoints.hlsDirectory, key: key)
                #expect(stored.seconds > 4, "\(key): \(stored.seconds) s stored")
            }
            // The only destination refused: the run ends, though a recording could go on, and the recording is whole.
            let beside = scratch.file("beside.mkv")
            let result = try await Castline.run([
                "broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--size", "320x240", "--record", beside,
            ], environment: ["CASTLINE_TEST_KEY": Self.key], timeout: .seconds(20))
            #expect(result.status == 1)
            #expect(result.stderr.contains("refused") && result.stderr.contains("no destination is left, so the run ends")
                    && result.stderr.contains("wrote \(beside) ("), "\(result.stderr)")
            #expect(try await ProbedMedia.probe(beside).duration > 0)
            #expect(!result.stderr.contains(Self.key))
            // A short key is masked where it is used, not wherever its letters stand: key `live`
            // on .../live once showed as `rtmp://127.0.0.1:PORT/****`, key `1` mangled the address.
            for key in ["live", "1"] {
                let short = try await Castline.run([
                    "broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--size", "320x240",
                ], environment: ["CASTLINE_TEST_KEY": key], timeout: .seconds(20))
                #expect(short.status == 1)
                #expect(short.stderr.contains("the server at \(endpoints.rtmpURL) refused to publish with this stream key"),
                        "\(short.stderr)")
                #expect(!short.stderr.contains("\(endpoints.rtmpURL)/\(key)"), "\(short.stderr)")
            }
            // The ingest's publish URL pasted whole, key and all: say how to split it.
            let pasted = try await Castline.run([
                "broadcast", endpoints.rtmpPublishURL(key: "mykey"), "--key-env", "CASTLINE_TEST_KEY", "--size", "320x240",
            ], environment: ["CASTLINE_TEST_KEY": Self.key], timeout: .seconds(20))
            #expect(pasted.status == 1)
            #expect(pasted.stderr.contains("""
                error: the server at \(endpoints.rtmpURL)/mykey refused the app "live/mykey": if mykey is the stream key, \
                give the URL without it (\(endpoints.rtmpURL)) and the key with --key-env or key:
                """), "\(pasted.stderr)")
        }
    }

    @Test("castline ingest prints ready-to-run lines, and bound to every interface never an address of 0.0.0.0")
    func ingestLines() async throws {
        let ingest = try Castline.start(["ingest", "--host", "0.0.0.0"])
        let deadline = ContinuousClock.now + .seconds(20)
        while !ingest.standardOutput.contains("castline listen"), ContinuousClock.now < deadline, ingest.isRunning {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(await Castline.interrupt(ingest, with: SIGTERM) == 0, "\(ingest.standardError)")
        let lines = ingest.standardOutput.split(separator: "\n").map(String.init)
        #expect(!ingest.standardOutput.contains("0.0.0.0"), "\(ingest.standardOutput)")
        let rtmp = try #require(lines.first { $0.hasPrefix("rtmp publish:") }?.split(separator: " ").last)
        #expect(lines.contains("               castline broadcast \(rtmp.dropLast("/<key>".count)) --key-env STREAM_KEY"),
                "\(ingest.standardOutput)")
        let hls = try #require(lines.first { $0.hasPrefix("hls playback:") }?.split(separator: " ").last)
        #expect(lines.contains("               castline listen \(hls.replacingOccurrences(of: "<key>", with: "test"))"),
                "\(ingest.standardOutput)")
        #expect(lines.contains("listening on every interface: from another machine, put this machine's address in place of 127.0.0.1"))
    }

    @Test("an untrusted certificate, an unknown scheme, a missing key variable, an unreachable host: one line, non-zero")
    func badInput() async throws {
        try await withIngest { _, endpoints in
            let untrusted = try await Castline.run(["broadcast", endpoints.rtmpsURL, "--key-env", "CASTLINE_TEST_KEY"],
                                                   environment: ["CASTLINE_TEST_KEY": Self.key])
            #expect(untrusted.status == 1, "\(untrusted.stderr)")
            #expect(untrusted.stderr.contains("--ca-file"), "\(untrusted.stderr)")
            let pinned = try await Castline.run([
                "broadcast", endpoints.rtmpsURL, "--key-env", "CASTLINE_TEST_KEY",
                "--fingerprint", endpoints.certificateSHA256, "--duration", "3s",
            ], environment: ["CASTLINE_TEST_KEY": Self.key])
            #expect(pinned.status == 0, "\(pinned.stderr)")
        }
        // Not an ingest URL: a usage error before anything runs, naming what it takes.
        let scheme = try await Castline.run(["broadcast", "http://127.0.0.1/live", "--key-env", "HOME"])
        #expect(scheme.status == 64, "\(scheme.stderr)")
        #expect(scheme.stderr.contains("rtmp(s)://") && scheme.stderr.contains("/whip"), "\(scheme.stderr)")
        #expect(scheme.stderr.split(separator: "\n").filter { $0.hasPrefix("Error:") }.count == 1, "\(scheme.stderr)")
        // A query on the app would be dropped by rtmp2sink unsaid (it often carries a token: not echoed).
        let query = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live?tok=castline-secret", "--key-env", "HOME"])
        #expect(query.status == 2 && query.stderr.contains("after the stream key") && !query.stderr.contains("castline-secret"),
                "\(query.stderr)")
        // A folder where the recording would go is never written over, --overwrite or not: nothing in it is lost.
        let scratch = try Scratch()
        let folder = scratch.file("takes.mkv")
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        _ = try scratch.write("takes.mkv/keep.txt", "kept")
        let onFolder = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-env", "HOME", "--record", folder, "--overwrite",
                                               "--duration", "1s"])
        #expect(onFolder.status == 2 && onFolder.stderr.contains("\"\(folder)\" is a folder, not a file"), "\(onFolder.stderr)")
        #expect(FileManager.default.fileExists(atPath: folder + "/keep.txt") && FileManager.default.fileExists(atPath: folder + "/sub"))
        let missing = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-env", "CASTLINE_UNSET_VARIABLE"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("CASTLINE_UNSET_VARIABLE"))
        let port = try FreePort.find()
        let unreachable = try await Castline.run(["broadcast", "rtmp://127.0.0.1:\(port)/live", "--key-env", "HOME"])
        #expect(unreachable.status == 1)
        #expect(unreachable.stderr.contains("cannot publish to rtmp://127.0.0.1:\(port)/live: Connection refused"), "\(unreachable.stderr)")
        // Beside one left out at the start, the other is alone: refused, it fails at once, not retried for ever.
        let leftAlone = try await Castline.run(["broadcast", "rtmp://castline-no-such-host.invalid/live", "rtmp://127.0.0.1:\(port)/live",
                                                "--key-env", "HOME"], timeout: .seconds(20))
        #expect(leftAlone.status == 1 && leftAlone.stderr.contains("Connection refused")
                && !leftAlone.stderr.contains("not connected yet"), "\(leftAlone.stderr)")
        for result in [missing, unreachable] {
            #expect(result.stderr.split(separator: "\n").filter { $0.hasPrefix("error") || $0.hasPrefix("castline broadcast:") }.count == 1,
                    "\(result.stderr)")
        }
        // Nothing reached the far end: the run never said it was playing.
        #expect(!unreachable.stderr.contains("playing"), "\(unreachable.stderr)")
        // A bad flag value is refused by the flag's own type, named as the flag with the value and
        // its help's example, with the usage status every bad flag has.
        let bitrate = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-env", "HOME", "--video-bitrate", "abc"])
        #expect(bitrate.status == 64 && bitrate.stderr.contains("The value 'abc' is invalid for '--video-bitrate <bitrate>'")
                    && bitrate.stderr.contains("e.g. 2500k"), "\(bitrate.stderr)")
        // One the flags cannot check names the key it became, never a line of a file the user did not write.
        let preset = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-env", "HOME", "--preset", "bogus"])
        #expect(preset.status == 2 && preset.stderr.hasPrefix("castline broadcast: stages[0].encode.video.preset: \"bogus\""), "\(preset.stderr)")
        // A flag that shapes nothing published is refused, not ignored: the file's own picture goes out.
        let ignored = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-env", "HOME", "--source", "/etc/hostname",
                                              "--size", "640x360"])
        #expect(ignored.status == 64 && ignored.stderr.contains("--size: --source publishes the file's own picture and sound"),
                "\(ignored.stderr)")
    }

    @Test("the key never appears in arguments, output, --print-pipeline or the graph")
    func keyStaysSecret() async throws {
        let keyFile = try Scratch()
        let path = try keyFile.write("key", Self.key + "\n")
        let printed = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-file", path, "--print-pipeline"])
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout.contains("key-file: \(path)"))
        #expect(!printed.stdout.contains(Self.key))
        let fromEnv = try await Castline.run(["broadcast", "rtmp://127.0.0.1/live", "--key-env", "CASTLINE_TEST_KEY",
                                              "--print-pipeline"], environment: ["CASTLINE_TEST_KEY": Self.key])
        #expect(fromEnv.stdout.contains("${CASTLINE_TEST_KEY}"))
        #expect(!fromEnv.stdout.contains(Self.key))
        try await withIngest { _, endpoints in
            let pipeline = try keyFile.write("p.yaml", """
                version: 1
                source: { test: {} }
                stages: [ { encode: {} } ]
                sinks: [ { rtmp: { url: \(endpoints.rtmpURL), key: "${CASTLINE_TEST_KEY}" } } ]
                """)
            let graph = try await Castline.run(["graph", pipeline], environment: ["CASTLINE_TEST_KEY": Self.key])
            #expect(graph.status == 0, "\(graph.stderr)")
            #expect(!graph.stdout.contains(Self.key) && graph.stdout.contains("key: ****"), "\(graph.stdout)")
            // GStreamer's dump has the publish pipeline too (FLV tags into rtmp2sink), its key masked.
            let dump = try await Castline.run(["graph", pipeline, "--gst"], environment: ["CASTLINE_TEST_KEY": Self.key])
            #expect(dump.status == 0, "\(dump.stderr)")
            #expect(dump.stdout.contains("cluster_own0") && dump.stdout.contains("rtmp2sink"))
            #expect(!dump.stdout.contains(Self.key) && dump.stdout.contains("/live/****"), "\(dump.stdout)")
            let process = try Castline.start(["run", pipeline], environment: ["CASTLINE_TEST_KEY": Self.key])
            // Stopped once the ingest took the stream: a publish stopped before that is not a clean end.
            #expect(await Castline.waitFor("publishing", in: process, timeout: .seconds(15)), "\(process.standardError)")
            let arguments = (try? String(contentsOfFile: "/proc/\(process.pid)/cmdline", encoding: .utf8)) ?? ""
            #expect(!arguments.isEmpty)
            #expect(!arguments.contains(Self.key))
            let status = await Castline.interrupt(process)
            #expect(status == 0, "\(process.standardError)")
            #expect(!process.standardError.contains(Self.key) && !process.standardOutput.contains(Self.key))
        }
    }

    @Test("--source FILE loops the file with running timestamps, and does not re-encode H.264/AAC")
    func loopsAFileWithoutReencoding() async throws {
        let scratch = try Scratch()
        let file = scratch.file("source.mkv")
        // 3 s of H.264 with a keyframe every 1 s: a re-encode would space them 2 s apart.
        let made = try await Castline.run([
            "run", Castline.example("test-pattern-to-mkv.yaml"), "--set", "sinks[0].file.path=\(file)",
            "--set", "source.test.video.width=640", "--set", "source.test.video.height=360",
            "--set", "stages[0].encode.video.keyframe-interval=1s", "--duration", "3s",
        ])
        try #require(made.status == 0, "\(made.stderr)")
        try await withIngest { _, endpoints in
            let result = try await Castline.run([
                "broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--source", file, "--duration", "8s",
            ], environment: ["CASTLINE_TEST_KEY": Self.key])
            #expect(result.status == 0, "\(result.stderr)")
            let packets = try await endpoints.published(key: Self.key).videoPackets()
            let times = packets.map(\.time)
            let span = (times.last ?? 0) - (times.first ?? 0)
            #expect(span > 7, "published \(span) s of a 3 s file looped for 8 s")
            #expect(zip(times.dropFirst(), times).allSatisfy { $0 > $1 && $0 - $1 < 0.1 }, "timestamps jump or go back")
            let keyframes = packets.filter(\.isKey).map(\.time)
            let gaps = zip(keyframes.dropFirst(), keyframes).map { $0 - $1 }
            #expect(!gaps.isEmpty && gaps.allSatisfy { $0 < 1.2 }, "keyframe gaps \(gaps): re-encoded?")
        }
    }
}

/// What the ingest stored of a publish, as ffprobe reads its HLS segments (`KEY-N.ts` in
/// `directory`, in order): bytes of every stream's packets over the time the video spans,
/// in bit/s (the MPEG-TS overhead left out).
func storedBitrate(in directory: String, key: String) async throws -> (total: Double, seconds: Double) {
    let segments = try FileManager.default.contentsOfDirectory(atPath: directory)
        .filter { $0.hasPrefix("\(key)-") && $0.hasSuffix(".ts") }
        .sorted { (Int($0.dropFirst(key.count + 1).dropLast(3)) ?? 0) < (Int($1.dropFirst(key.count + 1).dropLast(3)) ?? 0) }
    let probe = try await ChildProcess.run("/usr/bin/ffprobe", [
        "-v", "error", "-show_entries", "packet=codec_type,size,pts_time", "-of", "csv=p=0",
        "concat:" + segments.map { "\(directory)/\($0)" }.joined(separator: "|"),
    ], timeout: .seconds(30))
    var bytes = 0.0
    var videoTimes: [Double] = []
    for line in probe.stdout.split(separator: "\n") {
        let fields = line.split(separator: ",")
        guard fields.count >= 3, let size = Double(fields[2]) else { continue }
        bytes += size
        if fields[0] == "video", let time = Double(fields[1]) { videoTimes.append(time) }
    }
    guard let first = videoTimes.min(), let last = videoTimes.max(), last > first else { return (0, 0) }
    // The span between the first and last frame, plus the last frame's own 1/30 s.
    let seconds = last - first + 1.0 / 30
    return (bytes * 8 / seconds, seconds)
}

extension BroadcastTests {
    @Test("the bitrate on the wire is the one asked for: 500k, 2.5M and 8M (with 128k audio), ± 5 %, as the ingest stored it; --record keeps the same encode")
    func honestBitrate() async throws {
        try await withIngest { _, endpoints in
            let targets = [500_000, 2_500_000, 8_000_000]
            let keys = targets.map { "rate\($0 / 1000)k\(UInt16.random(in: 1000...9999))" }
            let scratch = try Scratch()
            let recording = scratch.file("local.mkv")
            // At once: three small encodes share the cores, and the test takes one run's time.
            let runs = try targets.indices.map { index in
                try Castline.start(["broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--size", "640x360",
                                    "--video-bitrate", "\(targets[index] / 1000)k", "--duration", "8s"]
                                   + (index == 1 ? ["--record", recording] : []),
                                   environment: ["CASTLINE_TEST_KEY": keys[index]])
            }
            for run in runs { #expect(await run.waitForExit(timeout: .seconds(40)) == 0, "\(run.standardError)") }
            // The status line puts the encoders' target beside the rate measured on the wire.
            for (run, target) in zip(runs, targets) {
                #expect(run.standardError.contains("  target \((target + 128_000) / 1000) kbit/s"),
                        "\(run.standardError.prefix(600))")
            }
            // The one recorded while publishing: the whole run, both streams.
            let media = try await ProbedMedia.probe(recording)
            #expect(abs(media.duration - 8) <= 0.5, "recorded \(media.duration) s")
            #expect(media.streams.map(\.codec).sorted() == ["aac", "h264"], "\(media.streams.map(\.codec))")
            for (target, key) in zip(targets, keys) {
                // nginx closes the last segment once the publish has ended.
                try #require(await endpoints.published(key: key).waitForSegments(3, timeout: .seconds(10)))
                let stored = try await storedBitrate(in: endpoints.hlsDirectory, key: key)
                let wanted = Double(target + 128_000)
                print(String(format: "target %.0fk + 128k audio: stored %.0fk over %.1f s (%+.1f %%)",
                             Double(target) / 1000, stored.total / 1000, stored.seconds, (stored.total / wanted - 1) * 100))
                #expect(stored.seconds > 5, "only \(stored.seconds) s stored")
                #expect(abs(stored.total / wanted - 1) <= 0.05, "asked \(wanted), stored \(stored.total) bit/s")
            }
        }
    }
}
