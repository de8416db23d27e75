import Foundation
import LocalIngest
import Testing
import TestSupport

/// Listening to HLS from a real nginx-rtmp ingest and from a plain HTTP server on loopback.
@Suite("castline listen, end to end", .serialized, .timeLimit(.minutes(3)))
struct ListenTests {
    @Test("a live 1 kHz stream from the ingest, audio only, recorded for 4 s: 1 kHz, 4 s ± 0.5 s")
    func recordsLiveTone() async throws {
        try await withIngest { _, endpoints in
            let key = "tone\(UInt16.random(in: 1000...9999))"
            let publisher = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-v", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "40",
                "-c:v", "libx264", "-preset", "ultrafast", "-g", "60", "-pix_fmt", "yuv420p",
                "-c:a", "aac", "-b:a", "128k", "-f", "flv", endpoints.rtmpPublishURL(key: key),
            ])
            try publisher.start()
            defer { publisher.signal(SIGKILL) }
            // A few segments of history, as a stream that has been live a while has.
            #expect(await endpoints.published(key: key).waitForSegments(3, timeout: .seconds(30)))
            let scratch = try Scratch()
            let wav = scratch.file("tone.wav")
            let result = try await Castline.run([
                "listen", endpoints.hlsPlaylistURL(key: key), "--audio-only", "--output", "null",
                "--record", wav, "--duration", "4s",
            ], timeout: .seconds(40))
            #expect(result.status == 0, "\(result.stderr)")
            let media = try await ProbedMedia.probe(wav)
            #expect(abs(media.duration - 4) <= 0.5, "recorded \(media.duration) s")
            let frequency = try await dominantFrequency(ofWAV: wav, scratch: scratch)
            #expect(abs(frequency - 1000) < 20, "dominant frequency \(frequency) Hz")
        }
    }

    @Test("3 outages in one listen: each is reconnecting, then reconnected; exit 0, 3 reconnects, the tone intact")
    func ridesOutOutages() async throws {
        try await withIngest { _, endpoints in
            let key = "outage\(UInt16.random(in: 1000...9999))"
            let publisher = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-v", "error", "-re", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "300",
                "-c:a", "aac", "-b:a", "128k", "-f", "flv", endpoints.rtmpPublishURL(key: key),
            ])
            try publisher.start()
            defer { publisher.signal(SIGKILL) }
            #expect(await endpoints.published(key: key).waitForSegments(3, timeout: .seconds(30)))
            // Three keep `make test` short; bench/hls-outage-cycles.sh runs fifty. nginx writes the stream;
            // this server, which the test stops and starts, is what castline reads.
            var server = try await HTTPFolder(endpoints.hlsDirectory)
            let port = server.port
            let scratch = try Scratch()
            let wav = scratch.file("outage.wav")
            let listener = try Castline.start([
                "listen", server.url("\(key).m3u8"), "--audio-only", "--output", "null", "--record", wav,
            ])
            #expect(await Castline.waitFor("stream started", count: 1, in: listener, timeout: .seconds(20)), "\(listener.standardError)")
            let started = ContinuousClock.now
            for outage in 1...3 {
                await server.stop()
                let reconnecting = await Castline.waitFor("\nreconnecting", count: outage, in: listener, timeout: .seconds(15))
                server = try await HTTPFolder(endpoints.hlsDirectory, port: port)
                let reconnected = await Castline.waitFor("reconnected after", count: outage, in: listener, timeout: .seconds(30))
                try #require(reconnecting && reconnected, "outage \(outage): \(listener.standardError.suffix(800))")
            }
            let elapsed = (ContinuousClock.now - started) / .seconds(1)
            let status = await Castline.interrupt(listener)
            await server.stop()
            #expect(status == 0, "\(listener.standardError.suffix(800))")
            #expect(listener.standardError.contains("reconnects 3"), "\(listener.standardError.suffix(400))")
            // Nothing is lost while the window holds what the outage kept from castline: the
            // recording holds as much as the run played, which is how long it lasted less the
            // time it held the pipeline buffering (a stall before each loss is noticed, a segment
            // awaited after; seen from 0.3 to 2.1 s), as its summary says.
            let buffering = listener.standardError.firstMatch(of: /summary: [0-9.]+ s, buffering ([0-9.]+) s/)
                .flatMap { Double($0.output.1) }
            let held = try #require(buffering, "\(listener.standardError.suffix(400))")
            let media = try await ProbedMedia.probe(wav)
            #expect(media.duration > elapsed - held - 1, "recorded \(media.duration) s over \(elapsed) s of outages, \(held) s buffering")
            let frequency = try await dominantFrequency(ofWAV: wav, scratch: scratch)
            #expect(abs(frequency - 1000) < 20, "dominant frequency \(frequency) Hz")
        }
    }

    @Test("an audio-only publish, listened to without --audio-only: the video its program map lists but never carries is not waited for")
    func programMapStreamNeverCarried() async throws {
        try await withPublishedTone(key: "mapped", segments: 3, seconds: 60) { endpoints, key in
            let began = ContinuousClock.now
            let result = try await Castline.run(["listen", endpoints.hlsPlaylistURL(key: key), "--output", "null",
                                                 "--duration", "3s"], timeout: .seconds(20))
            #expect(result.status == 0, "\(result.stderr)")
            #expect(ContinuousClock.now - began < .seconds(8), "took \(ContinuousClock.now - began) for 3 s of media")
        }
    }

    @Test("HLS re-encoded, with and without a delay after: the picture's position is the stream's own, as the sound's, not x264's 1000-hour offset; --duration ends it cleanly while the decoder still sends (read ahead of play)")
    func positionThroughAnEncoder() async throws {
        let scratch = try Scratch()
        let server = try await HTTPFolder.servingVOD(seconds: 8, in: scratch)
        defer { Task { await server.stop() } }
        for delay in ["", "  - delay: { initial: 1s, max: 10s }\n"] {
            let file = try scratch.write("encode.yaml", """
                version: 1
                source: { hls: { url: "\(server.url("vod.m3u8"))" } }
                stages:
                  - encode: { video: { bitrate: 300k } }
                \(delay)  - stats: {}
                sinks: [ { null: {} } ]
                """)
            let result = try await Castline.run(["run", file, "--duration", "4s", "--stats-json", "-"], timeout: .seconds(30))
            #expect(result.status == 0, "\(result.stderr)")
            func last(_ stream: String) -> Double {
                jsonLines(result.stdout).last { $0["stream"] as? String == stream && $0["position_s"] != nil }?["position_s"] as? Double ?? -1
            }
            let (video, audio) = (last("video"), last("audio"))
            #expect(video > 0.5 && video < 10 && abs(video - audio) < 0.2, "delay \(!delay.isEmpty): video at \(video) s, audio at \(audio) s")
        }
    }

    @Test("a VOD playlist plays to its end and exits 0, saying the stream ended")
    func vodPlaysToTheEnd() async throws {
        let scratch = try Scratch()
        let server = try await HTTPFolder.servingVOD(seconds: 4, in: scratch)
        defer { Task { await server.stop() } }
        let started = ContinuousClock.now
        let result = try await Castline.run(["listen", server.url("vod.m3u8"), "--output", "null", "--stats-json", "-"],
                                           timeout: .seconds(30))
        let took = ContinuousClock.now - started
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("end of stream"))
        // The same, for machines: JSON lines on stdout.
        let events = jsonLines(result.stdout).compactMap { $0["event"] as? String }
        #expect(events.contains("stream-started"), "\(events)")
        #expect(events.last == "state", "\(events)")
        #expect(events.contains("end-of-stream"))
        #expect(took > .seconds(3), "played 4 s of media in \(took): not in real time")
        // A VOD playlist is read once and each segment fetched once (its head tells the streams).
        #expect(server.requests(of: "vod.m3u8") == 1, "\(server.requests(of: "vod.m3u8")) playlist fetches")
        #expect(server.requests(of: "vod-0.ts") == 1, "the first segment fetched \(server.requests(of: "vod-0.ts")) times")
    }

    @Test("""
        Ctrl-C with seconds of the stream queued in front of the clocked outputs: the run ends at once (exit 0, \
        under a second), and the paced recording holds all that came, what was queued included: as many packets \
        as the stats' last line counted buffers
        """)
    func interruptEndsAtOnce() async throws {
        let scratch = try Scratch()
        let server = try await HTTPFolder.servingVOD(seconds: 12, in: scratch)
        defer { Task { await server.stop() } }
        let recording = scratch.file("heard.mkv")
        let listener = try Castline.start(["listen", server.url("vod.m3u8"), "--output", "null", "--record", recording,
                                           "--stats-json", "-"])
        defer { listener.signal(SIGKILL) }
        // The stats stage's clock says how long it has played; the VOD's segments are read well ahead of it.
        #expect(await waitUntil(.seconds(20)) { listener.standardOutput.contains("\"running_time_s\":2.") }, "\(listener.standardError)")
        let asked = ContinuousClock.now
        let status = await Castline.interrupt(listener)
        let took = ContinuousClock.now - asked
        #expect(status == 0, "\(listener.standardError)")
        #expect(took < .seconds(1), "Ctrl-C took \(took)")
        await listener.waitForOutput()
        let played = jsonLines(listener.standardOutput).compactMap { $0["running_time_s"] as? Double }.last ?? 0
        let media = try await ProbedMedia.probe(recording)
        #expect(media.duration > played - 0.3, "recorded \(media.duration) s, played \(played) s")
        let samples = jsonLines(listener.standardOutput).filter { $0["event"] as? String == "stats" }
        try await expectLastSamplesCountPackets(samples, of: recording)
    }

    @Test("http_proxy in the environment carries the playlist and segment fetches, as curl's does")
    func environmentProxy() async throws {
        let scratch = try Scratch()
        let server = try await HTTPFolder.servingVOD(seconds: 2, in: scratch)
        defer { Task { await server.stop() } }
        let port = try FreePort.find()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/forward_proxy.py").path
        let proxy = ChildProcess(executable: ChildProcess.which("python3") ?? "/usr/bin/python3", arguments: [script, "\(port)"])
        try proxy.start()
        defer { Task { await proxy.terminate() } }
        #expect(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(10)))
        let result = try await Castline.run(["listen", server.url("vod.m3u8"), "--audio-only", "--output", "null"],
                                           environment: ["http_proxy": "http://127.0.0.1:\(port)", "no_proxy": "", "NO_PROXY": ""],
                                           timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        for path in ["vod.m3u8", "vod-0.ts"] {
            #expect(proxy.standardOutput.contains("proxied \(server.url(path))"), "\(proxy.standardOutput)")
        }
    }

    @Test("a master playlist with two renditions plays the chosen one, kept encoded in Matroska")
    func choosesRendition() async throws {
        let scratch = try Scratch()
        try await HTTPFolder.makeTwoRenditions(in: scratch, seconds: 3)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let recording = scratch.file("chosen.mkv")
        let result = try await Castline.run([
            "listen", server.url("master.m3u8"), "--rendition", "320x240", "--output", "null", "--record", recording,
        ], timeout: .seconds(30))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("rendition: 320x240"), "\(result.stderr)")
        let media = try await ProbedMedia.probe(recording)
        #expect(media.stream("video")?.fields["width"] == "320")
        // Kept as it came: ffmpeg made it Constrained Baseline; castline's encoder would say High.
        #expect(media.stream("video")?.fields["profile"]?.contains("Baseline") == true, "\(media.stream("video")?.fields ?? [:])")
        #expect(media.stream("audio")?.codec == "aac")
        let unknown = try await Castline.run(["listen", server.url("master.m3u8"), "--rendition", "4k", "--output", "null"])
        #expect(unknown.status == 2, "\(unknown.stderr)")
        #expect(unknown.stderr.contains("640x360"), "lists what there is: \(unknown.stderr)")
    }

    @Test("a playlist that is not there yet (404, asked for again) is waited for with --wait-for-live")
    func waitsForLive() async throws {
        let scratch = try Scratch()
        let staging = try Scratch()
        try await HTTPFolder.makeVOD(in: staging.path, name: "late", seconds: 2)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let listener = try Castline.start(["listen", server.url("late.m3u8"), "--wait-for-live", "--output", "null"])
        // Asked for twice while missing: the wait retried, and did not give up.
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline, listener.isRunning, server.requests(of: "late.m3u8") < 2 {
            try await Task.sleep(for: .milliseconds(50))
        }
        #expect(server.requests(of: "late.m3u8") >= 2 && listener.isRunning, "\(listener.standardError)")
        for name in try FileManager.default.contentsOfDirectory(atPath: staging.path) {
            try FileManager.default.copyItem(atPath: staging.file(name), toPath: scratch.file(name))
        }
        let status = await listener.waitForExit(timeout: .seconds(30))
        if status == nil { await listener.terminate() }
        await listener.waitForOutput()
        #expect(status == 0, "\(listener.standardError)")
        #expect(listener.standardError.contains("waiting for"))
        #expect(listener.standardError.contains("end of stream"))
    }

    @Test("a codec GStreamer has no decoder for: one line that says so, non-zero exit")
    func missingDecoder() async throws {
        let scratch = try Scratch()
        let media = scratch.file("dfpwm.mkv")
        let made = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "1",
            "-c:a", "dfpwm", media,
        ])
        try #require(made.status == 0, "\(made.stderr)")
        let file = try scratch.write("dfpwm.yaml", """
            version: 1
            name: dfpwm
            source:
              file: \(media)
            sinks:
              - null: {}
            """)
        let result = try await Castline.run(["run", file], timeout: .seconds(30))
        // Bad input (the file, or what the machine has installed): exit 2, as README's exit codes say.
        #expect(result.status == 2, "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n").filter { $0.contains("no GStreamer") }
        #expect(lines.count == 1, "\(result.stderr)")
        #expect(lines.first?.contains("audio/x-unknown") == true, "\(result.stderr)")
    }

    @Test("8 s of digital silence (a silence is 5 s), listened to with stats, alone and while recording the encoded stream: levels read, one silence counted; a tone reads its level")
    func silenceIsCounted() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.ffmpeg(["-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo", "-t", "8"] + HLSFixtures.codecs(video: false)
            + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "quiet-%d.ts", "quiet.m3u8"],
            in: scratch.path)
        try await HLSFixtures.vod("tone", in: scratch.path, seconds: 3, video: false)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        // The three listens at once: each plays in real time, and they share nothing but the server.
        func listen(_ playlist: String, _ json: String, _ extra: [String] = []) async throws -> (Castline.Result, [Double]) {
            let result = try await Castline.run(["listen", server.url(playlist), "--audio-only", "--output", "null",
                                                 "--stats-json", scratch.file(json)] + extra, timeout: .seconds(40))
            let levels = try String(contentsOfFile: scratch.file(json), encoding: .utf8).split(separator: "\n")
                .compactMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
                .filter { $0["stream"] as? String == "audio" }.compactMap { $0["rms_dbfs"] as? Double }
            return (result, levels)
        }
        async let alone = listen("quiet.m3u8", "alone.jsonl")
        async let recording = listen("quiet.m3u8", "recording.jsonl", ["--record", scratch.file("quiet.mkv")])
        async let toneListen = listen("tone.m3u8", "tone.jsonl")
        for (name, (result, levels)) in try await [("alone", alone), ("recording", recording)] {
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stderr.contains(", silences 1\n"), "\(name): \(result.stderr)")
            #expect(!levels.isEmpty && levels.allSatisfy { $0 <= -100 }, "\(name): \(levels)")
        }
        let (tone, levels) = try await toneListen
        #expect(tone.stderr.contains(", silences 0\n"), "\(tone.stderr)")
        // ffmpeg's sine is at 1/8 of full scale: -21 dBFS RMS.
        #expect(levels.contains { abs($0 + 21) < 1.5 }, "\(levels)")
    }

    @Test("not HLS, an HTML page, a missing playlist: one clear line and a non-zero exit")
    func badInput() async throws {
        let scratch = try Scratch()
        _ = try scratch.write("page.m3u8", "<!DOCTYPE html><html><body>Not found</body></html>")
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let html = try await Castline.run(["listen", server.url("page.m3u8"), "--output", "null"])
        #expect(html.status == 2)
        #expect(html.stderr.contains("not an HLS playlist"), "\(html.stderr)")
        // Its name already ends in .m3u8: the line does not tell the user to make it so.
        #expect(!html.stderr.contains("end in .m3u8") && html.stderr.contains("check that the URL is the stream's playlist"), "\(html.stderr)")
        let missing = try await Castline.run(["listen", server.url("nothing.m3u8"), "--output", "null"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--wait-for-live"), "\(missing.stderr)")
        let notURL = try await Castline.run(["listen", "ftp://host/app", "--output", "null"])
        #expect(notURL.status == 2)
        #expect(notURL.stderr.contains("http"))
        // An RTMP stream is named by its key: without one, nothing could be played.
        let noKey = try await Castline.run(["listen", "rtmp://host/app", "--output", "null"])
        #expect(noKey.status == 2)
        #expect(noKey.stderr.contains("source.uri.uri: rtmp://host/app names no stream: give its key with --key-env VAR"), "\(noKey.stderr)")
        for result in [html, missing, notURL, noKey] {
            #expect(result.stderr.split(separator: "\n").count <= 3, "\(result.stderr)")
        }
    }
}
