import Foundation
import LocalIngest
import Testing

/// `castline monitor` on a stream made by ffmpeg with faults at known times, judged against
/// ffmpeg's own detectors (`silencedetect`, `blackdetect`, `freezedetect`, `ebur128`) on the
/// same stream with the same thresholds.
@Suite("castline monitor: alarms against ffmpeg's detectors", .serialized, .timeLimit(.minutes(3)))
struct MonitorTests {
    /// 20 s at 25 fps: silence 3-6 s, black 8-10 s (which is a frozen picture too), a frozen picture
    /// 12-14 s, 10 dB louder from 16 s.
    static func faultyStream(in folder: String) async throws {
        try await HLSFixtures.ffmpeg([
            "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000",
            "-filter_complex", """
                [0:v]drawbox=color=black:t=fill:enable='between(t,8,9.999)',split[moving][still];\
                [moving][still]freezeframes=first=300:last=349:replace=300[v];\
                [1:a]volume=enable='between(t,3,5.9999)':volume=0,volume=enable='gte(t,16)':volume=10dB[a]
                """,
            "-map", "[v]", "-map", "[a]", "-t", "20",
            // Lossless: a frozen source stays frozen (a lossy encoder keeps refining a still picture).
            "-c:v", "libx264", "-preset", "ultrafast", "-qp", "0", "-g", "50", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "64k",
        ] + [
            "-muxdelay", "0", "-muxpreload", "0",
            "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "faulty-%d.ts", "faulty.m3u8",
        ], in: folder)
    }

    /// The holds ffmpeg's detectors are given too.
    static let alarms = """
        silence: { below: -60, for: 2s }
        black: { for: 1s }
        frozen: { for: 1s }
        loud: { for: 1s }
        """

    /// What ffmpeg's detectors say of `url`: each `NAME_start`/`NAME_end` time, integrated loudness and true peak.
    static func ffmpegVerdicts(_ url: String) async throws -> (times: [String: [Double]], integrated: Double?, truePeak: Double?) {
        let result = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-hide_banner", "-nostats", "-i", url,
            "-af", "silencedetect=n=-60dB:d=2,ebur128=peak=true",
            "-vf", "blackdetect=d=1:pix_th=0.10:pic_th=0.98,freezedetect=n=-60dB:d=1",
            "-f", "null", "-",
        ], timeout: .seconds(60))
        let text = result.stderr + result.stdout
        var times: [String: [Double]] = [:]
        for match in text.matches(of: /(silence_start|silence_end|black_start|black_end|freeze_start|freeze_end)[:=] ?(-?[0-9.]+)/) {
            times[String(match.output.1), default: []].append(Double(match.output.2) ?? .nan)
        }
        let summary = text.range(of: "Summary:").map { String(text[$0.upperBound...]) } ?? ""
        let integrated = summary.firstMatch(of: /I:\s+(-?[0-9.]+) LUFS/).flatMap { Double($0.output.1) }
        let truePeak = summary.firstMatch(of: /True peak:\s+Peak:\s+(-?[0-9.]+) dBFS/).flatMap { Double($0.output.1) }
        return (times, integrated, truePeak)
    }

    @Test("each fault raised within its hold + 1 s, starting and ending with ffmpeg's detectors; loudness and true peak as ffmpeg's ebur128; /alarms and metrics while raised")
    func againstFFmpeg() async throws {
        let scratch = try Scratch()
        try await Self.faultyStream(in: scratch.path)
        let alarmsFile = try scratch.write("alarms.yaml", Self.alarms)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let url = server.url("faulty.m3u8")
        let reference = try await Self.ffmpegVerdicts(url)
        let port = try FreePort.find()
        let process = try Castline.start(["monitor", url, "--alarms", alarmsFile, "--stats-json", "-", "--control", "127.0.0.1:\(port)"])
        // While the silence is raised: the API and the metrics say so.
        try #require(await Castline.waitFor("alarm: silence", in: process, timeout: .seconds(30)), "\(process.standardError)")
        let api = ControlHTTP(port: port)
        let listed = try await api.get("/alarms").json
        let active = listed?["alarms"] as? [[String: Any]] ?? []
        #expect(active.contains { $0["kind"] as? String == "silence" && $0["stream"] as? String == "audio" }, "\(listed ?? [:])")
        let metrics = try await api.get("/metrics").text
        #expect(metrics.contains(#"castline_alarm_active{pipeline="faulty",kind="silence"} 1"#), "\(metrics)")
        let status = await process.waitForExit(timeout: .seconds(60))
        await process.waitForOutput()
        #expect(status == 0, "\(process.standardError)")

        let events = jsonLines(process.standardOutput)
        func edges(_ kind: String, _ name: String) -> [[String: Any]] {
            events.filter { $0["event"] as? String == name && $0["kind"] as? String == kind }
        }
        func starts(_ kind: String) -> [Double] { edges(kind, "alarm-raised").compactMap { $0["since_s"] as? Double } }
        func ends(_ kind: String) -> [Double] {
            edges(kind, "alarm-cleared").compactMap { cleared in
                guard let since = cleared["since_s"] as? Double, let lasted = cleared["lasted_s"] as? Double else { return nil }
                return since + lasted
            }
        }
        func same(_ ours: [Double], _ theirs: [Double]?, within tolerance: Double) -> Bool {
            guard let theirs, ours.count == theirs.count, !ours.isEmpty else { return false }
            return zip(ours, theirs).allSatisfy { abs($0 - $1) <= tolerance }
        }
        let frame = 0.04
        for (kind, name, tolerance, count) in [("silence", "silence", 0.1, 1), ("black", "black", frame, 1), ("frozen", "freeze", frame, 2)] {
            let theirs = (reference.times["\(name)_start"], reference.times["\(name)_end"])
            #expect(theirs.0?.count == count, "the fixture's \(name)s, as ffmpeg finds them: \(reference.times)")
            #expect(same(starts(kind), theirs.0, within: tolerance), "\(kind) began at \(starts(kind)), ffmpeg says \(theirs.0 ?? [])")
            #expect(same(ends(kind), theirs.1, within: tolerance), "\(kind) ended at \(ends(kind)), ffmpeg says \(theirs.1 ?? [])")
            #expect(edges(kind, "alarm-raised").allSatisfy { $0["hold_s"] as? Double == (kind == "silence" ? 2 : 1) })
        }
        // -21 LUFS, then 10 LU louder at 16 s: the 3 s window is 8 LU over -23 after 0.99 s of it.
        let loud = try #require(starts("loud").first, "\(events)")
        #expect(abs(loud - 16.99) <= 0.15, "loud began at \(loud)")
        let others = events.filter { ($0["event"] as? String)?.hasPrefix("alarm-") == true }
            .compactMap { $0["kind"] as? String }.filter { !["silence", "black", "frozen", "loud"].contains($0) }
        #expect(others.isEmpty, "no other alarm on this stream: \(others)")

        let audio = events.filter { $0["event"] as? String == "stats" && $0["loudness_i_lufs"] != nil }
        let integrated = try #require(audio.last?["loudness_i_lufs"] as? Double, "\(audio.last ?? [:])")
        #expect(abs(integrated - (reference.integrated ?? .nan)) <= 0.5, "integrated \(integrated), ffmpeg \(reference.integrated ?? .nan)")
        let peak = try #require(audio.compactMap { $0["true_peak_dbtp"] as? Double }.max())
        #expect(abs(peak - (reference.truePeak ?? .nan)) <= 0.5, "true peak \(peak), ffmpeg \(reference.truePeak ?? .nan)")
    }

    @Test("--fail-on silence: the first silence stops every stream, exit status 3, the line says why")
    func failOn() async throws {
        let scratch = try Scratch()
        try await Self.faultyStream(in: scratch.path)
        let alarmsFile = try scratch.write("alarms.yaml", Self.alarms)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let result = try await Castline.run(["monitor", server.url("faulty.m3u8"), "--alarms", alarmsFile, "--fail-on", "silence,black"],
                                            timeout: .seconds(40))
        #expect(result.status == 3, "\(result.stderr)")
        #expect(result.stderr.contains("faulty: silence alarm raised (--fail-on silence): stopped"), "\(result.stderr)")
        #expect(!result.stderr.contains("alarm: black"), "stopped at the silence, before the black: \(result.stderr)")
    }

    @Test("""
    A live stream silent from the start: the silence alarm (and the stats stage's silence) comes once 5 s of it have \
    played, not when the stage has read 5 s ahead of play-out, and says it began no earlier than the monitor connected
    """)
    func silenceToldAsItPlays() async throws {
        try await withIngest { _, endpoints in
            let key = "silent\(UInt16.random(in: 1000...9999))"
            let publisher = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-v", "error", "-re", "-f", "lavfi", "-i", "anullsrc=r=48000:cl=stereo", "-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25",
                "-t", "60", "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "50", "-c:a", "aac",
                "-f", "flv", endpoints.rtmpPublishURL(key: key),
            ])
            try publisher.start()
            defer { publisher.signal(SIGKILL) }
            // Four segments listed: the monitor starts three target durations back and reads them at once.
            try #require(await endpoints.published(key: key).waitForSegments(4, timeout: .seconds(40)))
            let result = try await Castline.run(["monitor", endpoints.hlsPlaylistURL(key: key), "--fail-on", "silence",
                                                 "--stats-json", "-"], timeout: .seconds(40))
            #expect(result.status == 3, "\(result.stderr)")
            let events = jsonLines(result.stdout)
            let iso = ISO8601DateFormatter()
            iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            func time(_ event: String, _ field: String = "ts") -> Date? {
                events.first { $0["event"] as? String == event }.flatMap { ($0[field] as? String).flatMap(iso.date) }
            }
            let connecting = try #require(events.first { $0["to"] as? String == "connecting" }.flatMap { ($0["ts"] as? String).flatMap(iso.date) })
            let playing = try #require(events.first { $0["to"] as? String == "playing" }.flatMap { ($0["ts"] as? String).flatMap(iso.date) })
            let raised = try #require(time("alarm-raised"), "\(result.stdout)")
            let since = try #require(time("alarm-raised", "since"))
            let heard = try #require(time("silence"), "\(result.stdout)")
            // Seen 2 s early before: the stage read the playlist's first segments at once.
            #expect(raised.timeIntervalSince(playing) >= 4.9, "raised \(raised.timeIntervalSince(playing)) s after playing began")
            #expect(heard.timeIntervalSince(playing) >= 4.9, "silence told \(heard.timeIntervalSince(playing)) s after playing began")
            #expect(since >= connecting.addingTimeInterval(-0.05), "began \(connecting.timeIntervalSince(since)) s before connecting")
        }
    }

    @Test("a live playlist that stops listing segments: stalled 1.5 target durations after the last, within 1 s; cleared within 1 s of the next")
    func stalledPlaylist() async throws {
        let scratch = try Scratch()
        let server = try await HLSBadInputTests.HostileServer(scratch: scratch)
        defer { Task { await server.stop() } }
        let process = try Castline.start(["monitor", server.url("stops.m3u8"), "--audio-only", "--duration", "14s", "--stats-json", "-"])
        let status = await process.waitForExit(timeout: .seconds(60))
        await process.waitForOutput()
        #expect(status == 0, "\(process.standardError)")
        let began = try #require(server.process.standardOutput.firstMatch(of: /stops began ([0-9.]+)/).flatMap { Double($0.output.1) })
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        func seconds(_ text: Any?) -> Double? { (text as? String).flatMap { iso.date(from: $0) }.map { $0.timeIntervalSince1970 - began } }
        let alarms = jsonLines(process.standardOutput).filter { ($0["event"] as? String)?.hasPrefix("alarm-") == true }
        try #require(alarms.map { "\($0["event"] ?? "") \($0["kind"] ?? "")" } == ["alarm-raised stalled", "alarm-cleared stalled"],
                     "\(alarms) \(process.standardError)")
        // The last new segment is listed at 4 s: the next is 1.5 target durations (3 s) late at 7 s.
        let raised = try #require(seconds(alarms[0]["ts"]))
        #expect(raised >= 7 && raised <= 8, "stalled raised \(raised) s after the playlist was first read")
        // The next segment is listed at 12 s.
        let cleared = try #require(seconds(alarms[1]["ts"]))
        #expect(cleared >= 12 && cleared <= 13, "stalled cleared \(cleared) s after the playlist was first read")
    }

    @Test("a bad --alarms file: its line and column, exit 2; an unknown --fail-on kind is refused with the kinds")
    func badInput() async throws {
        let scratch = try Scratch()
        let alarmsFile = try scratch.write("alarms.yaml", "silence: { below: -60, for: 2s }\nblak: { for: 1s }\n")
        let bad = try await Castline.run(["monitor", "http://127.0.0.1:9/x.m3u8", "--alarms", alarmsFile])
        #expect(bad.status == 2, "\(bad.stderr)")
        #expect(bad.stderr.contains("alarms.yaml:2:1") && bad.stderr.contains("blak"), "\(bad.stderr)")
        let kind = try await Castline.run(["monitor", "http://127.0.0.1:9/x.m3u8", "--fail-on", "silence,noise"])
        #expect(kind.status != 0 && kind.stderr.contains(#"--fail-on: "noise" is not an alarm (alarms: silence, loud, quiet, clipping, black, frozen, stalled, slow-download, behind-live, av-drift, bitrate, reconnecting)"#),
                "\(kind.stderr)")
    }

    @Test("--webhook-env: each alarm POSTed as its JSON line, in order, retried after a 503; the URL's secret path never shown")
    func webhook() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "8",
                                      "-af", "volume=enable='between(t,2,4.9999)':volume=0"] + HLSFixtures.codecs(video: false)
                                     + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "gap-%d.ts",
                                        "gap.m3u8"], in: scratch.path)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let port = try FreePort.find()
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/webhook_sink.py").path
        let sink = ChildProcess(executable: ChildProcess.which("python3") ?? "/usr/bin/python3", arguments: [script, "\(port)"])
        try sink.start()
        defer { Task { await sink.terminate() } }
        try #require(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(10)), "\(sink.standardError)")
        let secret = "T0-\(UUID().uuidString)"
        let alarms = try scratch.write("alarms.yaml", "silence: { for: 1s }\n")
        let result = try await Castline.run(["monitor", server.url("gap.m3u8"), "--alarms", alarms, "--audio-only",
                                             "--webhook-env", "CASTLINE_TEST_WEBHOOK"],
                                            environment: ["CASTLINE_TEST_WEBHOOK": "http://127.0.0.1:\(port)/hooks/\(secret)"],
                                            timeout: .seconds(40))
        #expect(result.status == 0, "\(result.stderr)")
        let received = sink.standardOutput.split(separator: "\n").map { line -> (String, [String: Any]) in
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            let body = (try? JSONSerialization.jsonObject(with: Data((parts.last ?? "").utf8))) as? [String: Any] ?? [:]
            return (parts.first ?? "", body)
        }
        #expect(received.map { $0.1["event"] as? String ?? "?" } == ["alarm-raised", "alarm-cleared"], "\(sink.standardOutput)")
        #expect(received.allSatisfy { $0.0 == "application/json" && $0.1["kind"] as? String == "silence" && $0.1["pipeline"] as? String == "gap" })
        #expect(abs((received.first?.1["since_s"] as? Double ?? 0) - 2) < 0.1, "\(sink.standardOutput)")
        #expect(result.stderr.contains("webhook http://127.0.0.1:\(port)/**** answered HTTP 503; retrying in"), "\(result.stderr)")
        #expect(!result.stderr.contains(secret) && !result.stdout.contains(secret), "\(result.stderr)")
    }
}
