import Foundation
import LocalIngest
import Testing

/// The foundation as a user meets it: validate, run, stop, record, inspect.
@Suite("castline CLI, end to end", .timeLimit(.minutes(3)))
struct FoundationTests {
    @Test("every example in pipelines/ validates")
    func examplesValidate() async throws {
        let examples = try FileManager.default.contentsOfDirectory(atPath: Castline.repositoryRoot + "/pipelines")
            .filter { $0.hasSuffix(".yaml") }.sorted()
        #expect(examples.count >= 3)
        let result = try await Castline.run(["validate"] + examples.map(Castline.example))
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").count == examples.count)
        for example in examples {
            #expect(result.stdout.contains("\(example): ok"))
        }
        // Checked without its key, as a CI job would: the variable is needed at run time, not an error.
        #expect(result.stdout.contains("broadcast-to-mux.yaml: ok (needs MUX_STREAM_KEY at run time)"), "\(result.stdout)")
        let printed = try await Castline.run(["broadcast", "rtmps://global-live.mux.com:443/app", "--key-env", "CASTLINE_UNSET_KEY",
                                              "--print-pipeline"])
        #expect(printed.status == 0, "\(printed.stderr)")
        #expect(printed.stdout.contains("key: ${CASTLINE_UNSET_KEY}"), "\(printed.stdout)")
        let run = try await Castline.run(["run", Castline.example("broadcast-to-mux.yaml")])
        #expect(run.status == 2)
        #expect(run.stderr.contains("sinks[0].rtmp.key: environment variable MUX_STREAM_KEY is not set"), "\(run.stderr)")
        // An SRT passphrase's length is the value's, not the reference's (${SP} is 5 characters).
        let scratch = try Scratch()
        let srt = try scratch.write("srt.yaml", """
            version: 1
            source: { test: {} }
            sinks: [ { srt: { url: "srt://:9000?mode=listener", passphrase: "${SP}" } } ]
            """)
        let checked = try await Castline.run(["validate", srt])
        #expect(checked.status == 0 && checked.stdout.contains("srt.yaml: ok (needs SP at run time)"), "\(checked.stdout)\(checked.stderr)")
        // The same from a flag; and a stand-in is never sent to a server (`graph` reads the source first).
        let flagged = try await Castline.run(["broadcast", "srt://h:9000", "--passphrase-env", "CL_P", "--print-pipeline"])
        #expect(flagged.status == 0 && flagged.stdout.contains("passphrase: ${CL_P}"), "\(flagged.stderr)")
        let reading = try scratch.write("read.yaml", """
            version: 1
            source: { uri: { uri: "srt://127.0.0.1:9", passphrase: "${SP}" } }
            sinks: [ { null: {} } ]
            """)
        let drawn = try await Castline.run(["graph", reading])
        #expect(drawn.status == 2 && drawn.stderr.contains("reading the stream needs ${SP} set"), "\(drawn.stderr)")
    }

    @Test("shortcuts: listen --output window is a video and an audio sink, rtmp:// and srt:// a uri source with the key or passphrase read from the environment; broadcast srt:// an srt sink, --microphone/--camera a capture source; a misplaced flag is one line, exit 64 (usage)")
    func shortcutsForInputsAndOutputs() async throws {
        func printed(_ arguments: [String]) async throws -> String {
            let result = try await Castline.run(arguments + ["--print-pipeline"])
            #expect(result.status == 0, "\(arguments): \(result.stderr)")
            return result.stdout
        }
        let window = try await printed(["listen", "http://127.0.0.1/a.m3u8", "--output", "window"])
        // A window is for the picture: no sound device is a warning there, not an error.
        #expect(window.contains("  - video: {}\n  - audio:\n      required: false"), "\(window)")
        let rtmp = try await printed(["listen", "rtmp://127.0.0.1/live", "--key-env", "K"])
        #expect(rtmp.contains("uri:\n    uri: rtmp://127.0.0.1/live\n    key: ${K}"), "\(rtmp)")
        let srt = try await printed(["listen", "srt://127.0.0.1:9000", "--passphrase-env", "CASTLINE_UNSET_PASS"])
        #expect(srt.contains("passphrase: ${CASTLINE_UNSET_PASS}"), "\(srt)")
        let mixed = try await printed(["broadcast", "rtmp://a.example/live", "srt://b.example:9000", "--key-env", "K", "--passphrase-env", "CASTLINE_UNSET_PASS"])
        #expect(mixed.contains("  - rtmp:\n      url: rtmp://a.example/live\n      key: ${K}"), "\(mixed)")
        #expect(mixed.contains("  - srt:\n      url: srt://b.example:9000\n      passphrase: ${CASTLINE_UNSET_PASS}"), "\(mixed)")
        let capture = try await printed(["broadcast", "srt://b.example:9000", "--microphone", "mic", "--camera", "/dev/video2"])
        #expect(capture.contains("capture:\n    audio:\n      device: mic\n    video:\n      device: /dev/video2"), "\(capture)")
        let replacing = try await printed(["listen", "http://127.0.0.1/a.m3u8", "--record", "a.mkv", "--overwrite"])
        #expect(replacing.contains("overwrite: true"), "\(replacing)")
        for (arguments, says) in [
            (["listen", "http://h/a.m3u8", "--output", "window", "--audio-only"], "--output window shows the video: leave out --audio-only"),
            (["listen", "rtmp://h/live", "--wait-for-live"], "--wait-for-live is for HLS"),
            (["listen", "http://h/a.m3u8", "--passphrase-env", "CASTLINE_UNSET_PASS"], "--passphrase-env is for srt:// URLs"),
            (["broadcast", "rtmp://h/live", "--key-env", "K", "--passphrase-env", "CASTLINE_UNSET_PASS"], "--passphrase-env is for srt:// URLs"),
            (["broadcast", "srt://h:9000", "--source", "a.mp4", "--microphone", "default"], "give --source FILE or --microphone/--camera, not both"),
            (["broadcast", "srt://h:9000", "--key-env", "K"], "are for rtmp(s):// URLs; SRT takes --passphrase-env"),
            (["listen", "http://h/a.m3u8", "--overwrite"], "--overwrite is for --record's file"),
            (["listen", "http://h/a.m3u8", "--duration", "0s"], "--duration: give a time above 0"),
            // A negative time is a bad value to name, not a missing one.
            (["listen", "http://h/a.m3u8", "--duration", "-3s"], "The value '-3s' is invalid for '--duration"),
            (["listen", "http://h/a.m3u8", "--delay", "-5s"], "The value '-5s' is invalid for '--delay"),
            (["load", "http://h/a.m3u8", "--viewers", "2", "--timeout", "-1s"], "The value '-1s' is invalid for '--timeout"),
            (["latency", "--local", "--size", "10x"], "--size: \"10x\" is not WIDTHxHEIGHT (try 1280x720)"),
            (["ingest", "--host", "999.1.1.1"], "--host: \"999.1.1.1\" is not an IP address of this machine"),
        ] {
            let result = try await Castline.run(arguments)
            #expect(result.status == 64 && result.stderr.contains(says), "\(arguments): \(result.stderr)")
        }
        // A passphrase in the URL would show; a short key held by the URL castline makes is masked
        // there too, in `graph` as in a run.
        let inURL = try await Castline.run(["listen", "srt://127.0.0.1:9?passphrase=long-enough-pass", "--output", "null"])
        #expect(inURL.status == 2 && inURL.stderr.contains("the passphrase does not go in the URL"), "\(inURL.stderr)")
        #expect(!inURL.stderr.contains("long-enough-pass"))
        let scratch = try Scratch()
        let file = try scratch.write("short-key.yaml", """
            version: 1
            source: { uri: { uri: "rtmp://127.0.0.1:\(try FreePort.find())/live", key: "${CASTLINE_SHORT_KEY}" } }
            sinks: [ { null: {} } ]
            """)
        let graph = try await Castline.run(["graph", file], environment: ["CASTLINE_SHORT_KEY": "k9z"], timeout: .seconds(30))
        #expect(graph.status == 2 && graph.stderr.contains("/live/****"), "\(graph.stderr)")
        #expect(!graph.stderr.contains("k9z"), "\(graph.stderr)")
    }

    @Test("a bad file gets FILE:LINE:COL: key.path: problem (fix) and exit 2")
    func badFile() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("bad.yaml", """
            version: 1
            source:
              test:
                audio: { tone: loud }
            sinks:
              - null: {}
            """)
        let result = try await Castline.run(["validate", file])
        #expect(result.status == 2)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("\(file):4:"), "\(result.stderr)")
        #expect(result.stderr.contains("source.test.audio.tone"), "\(result.stderr)")
    }

    @Test("a missing file is one line and exit 2, no stack trace; a media file that is not media is exit 2 too, naming it")
    func missingFile() async throws {
        let result = try await Castline.run(["run", "/nonexistent/pipeline.yaml"])
        #expect(result.status == 2)
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
        #expect(result.stderr.contains("/nonexistent/pipeline.yaml"))
        let scratch = try Scratch()
        let notMedia = try scratch.write("show.mp4", "not a video\n")
        let pipeline = try scratch.write("play.yaml", "version: 1\nsource: { file: \(notMedia) }\nsinks: [ { null: {} } ]\n")
        let played = try await Castline.run(["run", pipeline])
        #expect(played.status == 2 && played.stderr.contains("cannot open file://\(notMedia)") && played.stderr.contains("is it a media file?"),
                "\(played.stderr)")
    }

    @Test("--duration records a complete WAV of that length")
    func recordsWav() async throws {
        let scratch = try Scratch()
        let output = scratch.file("tone.wav")
        let result = try await Castline.run([
            "run", Castline.example("tone-to-wav.yaml"), "--set", "sinks[0].file.path=\(output)", "--duration", "3s",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let media = try await ProbedMedia.probe(output)
        #expect(media.stream("audio")?.codec.hasPrefix("pcm_") == true)
        #expect(media.stream("audio")?.fields["sample_rate"] == "48000")
        #expect(abs(media.duration - 3) < 0.5, "duration \(media.duration)")
        #expect(!FileManager.default.fileExists(atPath: output + ".partial"))
    }

    @Test("a hang-up (SIGHUP: the terminal or SSH session closed) stops cleanly as Ctrl-C does: exit 0 and a playable H.264/AAC Matroska file")
    func interruptLeavesPlayableFile() async throws {
        let scratch = try Scratch()
        let output = scratch.file("pattern.mkv")
        let process = try Castline.start([
            "run", Castline.example("test-pattern-to-mkv.yaml"), "--set", "sinks[0].file.path=\(output)",
            "--set", "source.test.video.width=640", "--set", "source.test.video.height=360",
        ])
        #expect(await Castline.waitFor("\nplaying", in: process, timeout: .seconds(15)), "\(process.standardError)")
        try await Task.sleep(for: .seconds(3))  // the media recorded before the interrupt
        process.signal(SIGHUP)
        let status = await process.waitForExit(timeout: .seconds(15))
        if status == nil { _ = await process.terminate() }
        #expect(status == 0, "\(process.standardError)")
        let media = try await ProbedMedia.probe(output)
        #expect(media.stream("video")?.codec == "h264")
        #expect(media.stream("video")?.fields["pix_fmt"] == "yuv420p")
        #expect(media.stream("audio")?.codec == "aac")
        #expect(media.duration > 2, "duration \(media.duration)")
    }

    @Test("its output read by something that goes away (`| head -1`): the run goes on, exit 0, the recording whole")
    func readerGoesAway() async throws {
        let scratch = try Scratch()
        let output = scratch.file("kept.mp4")
        let command = "\"\(Castline.executable)\" run \"\(Castline.example("test-pattern-to-mkv.yaml"))\" --set sinks[0].file.path=\(output) "
            + "--duration 2s --stats-json - 2>&1 | head -1 > /dev/null; echo \"status ${PIPESTATUS[0]}\""
        let result = try await ChildProcess.run("/bin/bash", ["-c", command], timeout: .seconds(60))
        #expect(result.stdout.contains("status 0"), "\(result.stdout) \(result.stderr)")
        let media = try await ProbedMedia.probe(output)
        #expect(media.stream("video")?.codec == "h264" && media.duration > 1.9, "duration \(media.duration)")
    }

    @Test("a second Ctrl-C stops at once, without waiting for the drain")
    func secondInterrupt() async throws {
        // A file played at clock pace: a clean stop drains seconds of queued media.
        let scratch = try Scratch()
        let recorded = scratch.file("tone.wav")
        let record = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-v", "error", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "8", "-ac", "2", recorded,
        ])
        try #require(record.status == 0, "\(record.stderr)")
        let file = try scratch.write("play.yaml", """
            version: 1
            source: { file: \(recorded) }
            sinks: [ { null: {} } ]
            """)
        let process = try Castline.start(["run", file])
        // Interrupted once playing: its signal handling is in place and there is media to drain.
        #expect(await Castline.waitFor("\nplaying", in: process, timeout: .seconds(15)), "\(process.standardError)")
        process.signal(SIGINT)
        // Signals do not queue: the second must come after the first was taken.
        // Watched closely (not at waitFor's 100 ms): the drain may be short.
        let deadline = ContinuousClock.now + .seconds(5)
        while !process.standardError.contains("stopping"), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(process.standardError.contains("stopping"), "the first signal was not taken: \(process.standardError)")
        process.signal(SIGINT)
        let status = await process.waitForExit(timeout: .seconds(5))
        if status == nil { _ = await process.terminate() }
        await process.waitForOutput()
        // 130, not the 0 of a clean stop: the second signal did not wait for the drain.
        #expect(status == 130, "\(process.standardError)")
        #expect(process.standardError.contains("stopping at once"))
    }

    @Test("a file source plays to its end and exits 0")
    func fileSourcePlaysToEnd() async throws {
        let scratch = try Scratch()
        let recorded = scratch.file("in.mkv")
        let record = try await Castline.run([
            "run", Castline.example("test-pattern-to-mkv.yaml"), "--set", "sinks[0].file.path=\(recorded)",
            "--set", "source.test.video.width=320", "--set", "source.test.video.height=240", "--duration", "2s",
        ])
        try #require(record.status == 0, "\(record.stderr)")
        let file = try scratch.write("play.yaml", """
            version: 1
            source:
              file: \(recorded)
            sinks:
              - file: \(scratch.file("out.wav"))
            """)
        let result = try await Castline.run(["run", file])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("end of stream"))
        let media = try await ProbedMedia.probe(scratch.file("out.wav"))
        #expect(abs(media.duration - 2) < 0.5, "duration \(media.duration)")
    }

    @Test("a sink path that cannot be written is refused before anything starts")
    func unwritableSink() async throws {
        let result = try await Castline.run([
            "run", Castline.example("tone-to-wav.yaml"), "--set", "sinks[0].file.path=/etc/hostname/tone.wav",
        ])
        #expect(result.status == 2)
        #expect(result.stderr.contains("sinks[0].file.path"), "\(result.stderr)")
        #expect(result.stderr.split(separator: "\n").count == 1, "\(result.stderr)")
    }

    @Test("no sound device, or a named one that does not open: one line before anything plays, exit 2")
    func noSoundDevice() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("speakers.yaml", """
            version: 1
            name: speakers
            source:
              test:
                audio: { tone: 440 }
            sinks:
              - audio: {}
            """)
        // No PulseAudio to reach and an ALSA without a default output, whatever this machine has.
        let empty = try scratch.write("alsa.conf", "")
        let none = try await Castline.run(["run", file, "--duration", "2s"],
                                          environment: ["PULSE_SERVER": "unix:/nonexistent", "ALSA_CONFIG_PATH": empty])
        #expect(none.status == 2, "\(none.stderr)")
        #expect(none.stderr.split(separator: "\n") == [
            "connecting",
            "speakers: sinks[0].audio: no sound device: neither PulseAudio nor ALSA has an output here "
                + "(start PulseAudio or plug one in; to play without sound, use --output null or a null: {} sink)",
        ], "\(none.stderr)")
        let named = try await Castline.run(["run", file, "--set", "sinks[0].audio.device=castline-no-such-device", "--duration", "2s"])
        #expect(named.status == 2, "\(named.stderr)")
        #expect(named.stderr.contains("cannot open the ALSA device \"castline-no-such-device\""), "\(named.stderr)")
        #expect(!named.stderr.contains("playing") && !none.stderr.contains("AL lib"))
    }

    @Test("an element GStreamer does not have is named, with where to look")
    func unknownElement() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("echo.yaml", """
            version: 1
            source:
              test: { audio: {} }
            stages:
              - gst: "audioechoo delay=1000"
            sinks:
              - null: {}
            """)
        let result = try await Castline.run(["validate", file])
        #expect(result.status == 2)
        #expect(result.stderr.contains("stages[0].gst.description"), "\(result.stderr)")
        #expect(result.stderr.contains("audioechoo"), "\(result.stderr)")
    }

    @Test("graph draws source → stages → sinks with the streams and forms between them, readably; --gst is GStreamer's dump")
    func graph() async throws {
        let scratch = try Scratch()
        let file = try scratch.write("listen.yaml", """
            version: 1
            name: listen
            source: { test: { audio: { tone: 440 } } }
            stages: [ { delay: { initial: 10s, max: 1m } }, { gain: { db: -6 } } ]
            sinks: [ { null: {} }, { file: \(scratch.file("x.wav")) } ]
            """)
        let result = try await Castline.run(["graph", file])
        #expect(result.status == 0, "\(result.stderr)")
        // Into a folder that is not there: said before anything is drawn, as a bad flag.
        let nowhere = scratch.file("no-such-folder/graph.svg")
        let misplaced = try await Castline.run(["graph", file, "-o", nowhere])
        #expect(misplaced.status == 64 && misplaced.stderr.contains("-o \(nowhere): the folder "), "\(misplaced.stderr)")
        let edges = result.stdout.split(separator: "\n").filter { $0.contains("->") }.map { $0.trimmingCharacters(in: .whitespaces) }
        #expect(edges == [
            #"part0 -> part1 [label="audio raw → encoded"];"#, #"part1 -> part2 [label="audio aac → raw"];"#,
            #"part2 -> sink0 [label="audio raw"];"#, #"part2 -> sink1 [label="audio raw"];"#,
        ], "\(result.stdout)")
        // Only what differs from the defaults is written in a box.
        #expect(result.stdout.contains(#"part1 [label="delay\ninitial: 10s\nmax: 1m""#), "\(result.stdout)")
        #expect(result.stdout.contains(#"[label="source: test\naudio: {tone: 440.0}""#), "\(result.stdout)")
        let svg = scratch.file("graph.svg")
        let written = try await Castline.run(["graph", Castline.example("test-pattern-to-mkv.yaml"), "-o", svg])
        #expect(written.status == 0, "\(written.stderr)")
        let text = try String(contentsOfFile: svg, encoding: .utf8)
        // Readable at a glance: a few parts wide, not GStreamer's 14679 px of elements.
        let size = text.firstMatch(of: /width="(\d+)pt" height="(\d+)pt"/).map { (Int($0.1) ?? 0, Int($0.2) ?? 0) }
        #expect(size.map { $0.0 < 1400 && $0.1 < 400 } == true, "\(String(describing: size))")
        let gst = try await Castline.run(["graph", Castline.example("test-pattern-to-mkv.yaml"), "--gst"])
        #expect(gst.status == 0 && gst.stdout.hasPrefix("digraph") && gst.stdout.contains("x264enc"), "\(gst.stderr)")
    }

    @Test("doctor finds every element, stages lists every kind")
    func doctorAndStages() async throws {
        let doctor = try await Castline.run(["doctor"])
        #expect(doctor.status == 0, "\(doctor.stdout)\(doctor.stderr)")
        #expect(doctor.stdout.contains("x264enc"))
        #expect(doctor.stdout.contains("gstreamer1.0-plugins-ugly"))
        // Whether this machine has one or not, the line is there (and does not fail the check).
        #expect(doctor.stdout.contains("sound output     PulseAudio or ALSA"), "\(doctor.stdout)")
        let stages = try await Castline.run(["stages"])
        #expect(stages.status == 0)
        for kind in ["encode:", "gst:", "test:", "file:", "null:", "audio:"] {
            #expect(stages.stdout.contains(kind), "\(kind) missing from stages")
        }
        let one = try await Castline.run(["stages", "encode"])
        #expect(one.stdout.contains("keyframe-interval (duration), default 2s"), "\(one.stdout)")
        let unknown = try await Castline.run(["stages", "nope"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("no kind named \"nope\" (known: alarms, audio, audio-only, capture, delay, encode, file, gain,"), "\(unknown.stderr)")
    }
}
