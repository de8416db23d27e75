import Foundation
import HTTPClient
#if canImport(FoundationXML)
import FoundationXML
#endif
import LocalIngest
import Testing

/// `--stats-json`, `--metrics` and `--stats-plot` of the built binary.
@Suite("stats outputs", .timeLimit(.minutes(2)))
struct StatsOutputTests {
    /// Raw F32 stereo at 48 kHz (3072 kbit/s exactly), silent, and a small video.
    static let silentTone = """
        version: 1
        name: stats-e2e
        source:
          test:
            video: { width: 160, height: 120, fps: 30 }
            audio: { volume: 0, beep: 0s }
        stages:
          - stats: { every: 500ms, silence-after: 1s, name: meter }
        sinks: [ { null: {} } ]
        """

    @Test("--stats-json - writes JSON lines with the documented keys, the exact bitrate and a timely silence")
    func jsonLines() async throws {
        let scratch = try Scratch()
        let pipeline = try scratch.write("stats.yaml", Self.silentTone)
        let run = try await Castline.run(["run", pipeline, "--duration", "3s", "--stats-json", "-"])
        try #require(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n").map(String.init)
        let objects = try lines.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not an object: \(line)")
        }
        let timestamp = try Regex(#"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$"#)
        for object in objects {
            let ts = try #require(object["ts"] as? String)
            #expect(ts.wholeMatch(of: timestamp) != nil, "ts \(ts)")
            #expect(object["pipeline"] as? String == "stats-e2e")
            #expect(object["event"] is String)
        }
        let events = objects.compactMap { $0["event"] as? String }
        #expect(events.contains("state"))
        let audio = objects.filter { $0["event"] as? String == "stats" && $0["stream"] as? String == "audio" }
        #expect(audio.count >= 4, "\(audio.count) audio samples")
        for sample in audio {
            #expect(sample["stage"] as? String == "meter")
            for key in ["buffers", "bytes", "bitrate_kbps", "bitrate_10s_kbps", "position_s", "rms_dbfs", "peak_dbfs", "gaps"] {
                #expect(sample[key] is Double, "\(key) in \(sample)")
            }
        }
        for sample in audio.dropFirst() {
            let bitrate = try #require(sample["bitrate_kbps"] as? Double)
            #expect(abs(bitrate - 3072) / 3072 < 0.05, "bitrate \(bitrate) kbit/s, expected 3072")
        }
        let video = objects.filter { $0["event"] as? String == "stats" && $0["stream"] as? String == "video" }
        #expect(video.dropFirst().allSatisfy { abs(($0["fps"] as? Double ?? 0) - 30) < 3 }, "\(video)")
        #expect(objects.contains { $0["event"] as? String == "stats" && $0["stream"] is NSNull })

        // The tone is silent from its first buffer, about one interval before the first sample.
        let silence = try #require(objects.first { $0["event"] as? String == "silence" }, "no silence in \(events)")
        #expect(silence["stream"] as? String == "audio")
        let firstSample = try #require(audio.first.flatMap { $0["ts"] as? String }.flatMap(Self.date))
        let silenceAt = try #require((silence["ts"] as? String).flatMap(Self.date))
        let after = silenceAt.timeIntervalSince(firstSample.addingTimeInterval(-0.5))
        #expect(after >= 0.9 && after <= 2.0, "silence \(after) s after the audio began (silence-after 1s)")
        #expect(run.stderr.contains("summary:"), "\(run.stderr)")
    }

    @Test("the last sample holds all that passed: as many buffers as the recording has packets (the run stops before the next beat)")
    func lastSampleHoldsTheEnd() async throws {
        let scratch = try Scratch()
        let recording = scratch.path + "/end.mkv"
        let pipeline = try scratch.write("end.yaml", """
            version: 1
            name: stats-end
            source: { test: { video: { width: 160, height: 120, fps: 30 }, audio: {} } }
            stages: [ { encode: {} }, { stats: { every: 1s, name: meter } } ]
            sinks: [ { file: \(recording) } ]
            """)
        let run = try await Castline.run(["run", pipeline, "--duration", "3.5s", "--stats-json", "-"])
        try #require(run.status == 0, "\(run.stderr)")
        let samples = EndToEndTests.jsonLines(run.stdout).filter { $0["event"] as? String == "stats" && $0["stage"] as? String == "meter" }
        try await expectLastSamplesCountPackets(samples, of: recording)
    }

    @Test("--metrics serves valid Prometheus exposition whose counters rise")
    func metrics() async throws {
        let scratch = try Scratch()
        let pipeline = try scratch.write("stats.yaml", Self.silentTone)
        let port = try FreePort.find()
        let process = try Castline.start(["run", pipeline, "--metrics", "127.0.0.1:\(port)"])
        defer { Task { await process.terminate() } }
        #expect(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .seconds(20)))
        let url = try #require(URL(string: "http://127.0.0.1:\(port)/metrics"))
        let bytes = #"castline_bytes_total{pipeline="stats-e2e",stage="meter",stream="audio"}"#
        /// Scrapes until `done` holds for the exposition (each stats interval adds to it), at most 15 s.
        func scrape(until done: (Exposition) -> Bool) async throws -> (HTTPResponse, Exposition) {
            let deadline = ContinuousClock.now + .seconds(15)
            while true {
                let response = try await HTTPFetcher.shared.fetch("GET", url)
                let exposition = try Exposition(response.text)
                if done(exposition) || ContinuousClock.now >= deadline { return (response, exposition) }
                try await Task.sleep(for: .milliseconds(100))
            }
        }
        let (first, before) = try await scrape { $0.samples[bytes] != nil }
        let (second, after) = try await scrape { ($0.samples[bytes] ?? 0) > (before.samples[bytes] ?? .infinity) }
        #expect(await Castline.interrupt(process) == 0)

        #expect(first.status == 200)
        #expect(first.headers["content-type"]?.hasPrefix("text/plain") == true)
        #expect(after.types["castline_bytes_total"] == "counter")
        #expect(after.types["castline_bitrate_kbps"] == "gauge")
        #expect(after.types["castline_rms_dbfs"] == "gauge")
        let earlier = try #require(before.samples[bytes], "\(first.text)")
        let later = try #require(after.samples[bytes], "\(second.text)")
        #expect(later > earlier)
        #expect(after.samples.keys.contains { $0.hasPrefix("castline_position_seconds{") })
    }

    @Test("--stats-plot writes well-formed SVG with the bitrate and level series")
    func plot() async throws {
        let scratch = try Scratch()
        let pipeline = try scratch.write("stats.yaml", Self.silentTone)
        let path = scratch.file("run.svg")
        let run = try await Castline.run(["run", pipeline, "--duration", "3s", "--stats-plot", path])
        try #require(run.status == 0, "\(run.stderr)")
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let reader = SVGReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        #expect(reader.root == "svg")
        #expect(reader.series.contains { $0.series == "bitrate" && $0.name == "meter audio" && $0.points >= 4 }, "\(reader.series)")
        #expect(reader.series.contains { $0.series == "level" && $0.name == "meter audio" && $0.points >= 4 }, "\(reader.series)")
        #expect(reader.texts.contains("bitrate (kbit/s)") && reader.texts.contains("audio RMS (dBFS)"))
        #expect(reader.texts.contains("castline: stats-e2e"))
        #expect(!reader.series.contains { $0.series == "behind" }, "no delay, no latency: no third panel")
    }

    @Test("outputs that cannot be written are said: a folder as --stats-plot or --stats-json before the run (a usage error), a full disk as it happens and in the summary")
    func unwritableOutputs() async throws {
        let scratch = try Scratch()
        let pipeline = try scratch.write("stats.yaml", Self.silentTone)
        let folder = scratch.file("plot.svg")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let began = ContinuousClock.now
        let plot = try await Castline.run(["run", pipeline, "--duration", "10s", "--stats-plot", folder])
        #expect(plot.status == 64 && plot.stderr.contains("--stats-plot: \(folder) is a folder"), "\(plot.stderr)")
        #expect(ContinuousClock.now - began < .seconds(8), "said at the start, not after the run")
        let json = try await Castline.run(["run", pipeline, "--duration", "1s", "--stats-json", scratch.path])
        #expect(json.status == 64 && json.stderr.contains("--stats-json: \(scratch.path) is a folder"), "\(json.stderr)")
        let full = try await Castline.run(["run", pipeline, "--duration", "2s", "--stats-json", "/dev/full"])
        #expect(full.stderr.components(separatedBy: "--stats-json: cannot write to /dev/full").count == 2, "said once: \(full.stderr)")
        #expect(full.stderr.contains("--stats-json: not every line was written to /dev/full"), "\(full.stderr)")
        // Written in place: the device stays a device (a new file renamed over it had replaced /dev/full and /dev/null).
        let kind = try FileManager.default.attributesOfItem(atPath: "/dev/full")[.type] as? FileAttributeType
        #expect(kind == .typeCharacterSpecial, "/dev/full is now \(String(describing: kind))")
    }

    @Test("--stats-plot with a delay stage adds the seconds behind live: the delay and the available delay")
    func plotWithDelay() async throws {
        let scratch = try Scratch()
        let pipeline = try scratch.write("delayed.yaml", """
            version: 1
            name: delayed
            source: { test: { audio: { tone: 440 } } }
            stages: [ { delay: { initial: 1s, max: 1m } }, { stats: { every: 500ms } } ]
            sinks: [ { null: {} } ]
            """)
        let path = scratch.file("delayed.svg")
        let run = try await Castline.run(["run", pipeline, "--duration", "4s", "--stats-plot", path])
        try #require(run.status == 0, "\(run.stderr)")
        let reader = SVGReader()
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: path)))
        parser.delegate = reader
        #expect(parser.parse())
        #expect(reader.series.contains { $0.series == "behind" && $0.name.hasSuffix(" delay") && !$0.name.contains("available") && $0.points >= 3 }, "\(reader.series)")
        #expect(reader.series.contains { $0.series == "behind" && $0.name.hasSuffix(" available delay") && $0.points >= 3 }, "\(reader.series)")
        #expect(reader.texts.contains("behind live (s)"))
    }

    @Test("broadcast --stats-json: the publisher's rtmp figures and the published streams' bitrates")
    func broadcastFigures() async throws {
        let key = "stats-\(UUID().uuidString.prefix(8))"
        try await withIngest { _, endpoints in
            let run = try await Castline.run([
                "broadcast", endpoints.rtmpURL, "--key-env", "CASTLINE_TEST_KEY", "--size", "320x240",
                "--duration", "5s", "--stats-json", "-",
            ], environment: ["CASTLINE_TEST_KEY": key])
            try #require(run.status == 0, "\(run.stderr)")
            #expect(!run.stdout.contains(key), "the key never reaches the JSON lines")
            let objects = EndToEndTests.jsonLines(run.stdout)
            let rtmp = objects.filter { $0["event"] as? String == "stats" && $0["stage"] as? String == "rtmp0" }
            let last = try #require(rtmp.last, "no rtmp stats in \(run.stdout)")
            #expect(last["reconnects"] as? Double == 0)
            // nginx-rtmp acknowledges every 5 MB, more than 5 s of this sends: present, not yet above 0.
            let sent = try #require(last["sent_bytes"] as? Double, "\(last)")
            let acked = try #require(last["acked_bytes"] as? Double, "\(last)")
            #expect(sent > 100_000 && acked <= sent, "\(last)")
            let audio = objects.filter { $0["event"] as? String == "stats" && $0["stream"] as? String == "audio" }
            // AAC at 128 kbit/s, measured after the encoder; the first interval starts mid-way.
            let rates = audio.dropFirst().compactMap { $0["bitrate_10s_kbps"] as? Double }
            let rate = try #require(rates.last, "\(audio)")
            #expect(abs(rate - 128) / 128 < 0.1, "published audio at \(rate) kbit/s")
            #expect(run.stderr.contains("rtmp:"), "\(run.stderr)")
        }
    }

    static func date(_ text: String) -> Date? {
        try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }
}

/// A small reader of the Prometheus text format: `# TYPE name kind` lines and
/// `name{labels} value` samples; throws on any other line.
struct Exposition {
    var types: [String: String] = [:]
    var samples: [String: Double] = [:]

    init(_ text: String) throws {
        let sample = try Regex(#"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? (\S+)$"#)
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, ["counter", "gauge", "histogram", "summary", "untyped"].contains(parts[3]) else {
                    throw ProbeError(message: "bad TYPE line: \(line)")
                }
                types[String(parts[2])] = String(parts[3])
            } else if line.hasPrefix("#") {
                continue
            } else {
                guard line.wholeMatch(of: sample) != nil, let space = line.lastIndex(of: " "),
                      let value = Double(line[line.index(after: space)...]) else {
                    throw ProbeError(message: "not an exposition line: \(line)")
                }
                samples[String(line[..<space])] = value
            }
        }
    }
}

final class SVGReader: NSObject, XMLParserDelegate {
    var root: String?
    var series: [(series: String, name: String, points: Int, coordinates: [(x: Double, y: Double)])] = []
    var texts: [String] = []
    /// Each panel's value-axis labels (by the panel's group id): the value and its height.
    var ticks: [String: [(value: Double, y: Double)]] = [:]
    private var text = ""
    private var group: String?
    private var tickY: Double?

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        if root == nil { root = name }
        if name == "g" { group = attributes["id"] }
        if name == "polyline", let kind = attributes["data-series"] {
            let pairs = attributes["points"]?.split(separator: " ") ?? []
            let coordinates = pairs.compactMap { pair -> (x: Double, y: Double)? in
                let parts = pair.split(separator: ",").compactMap { Double($0) }
                return parts.count == 2 ? (parts[0], parts[1]) : nil
            }
            series.append((kind, attributes["data-name"] ?? "", pairs.count, coordinates))
        }
        tickY = name == "text" && attributes["text-anchor"] == "end" ? attributes["y"].flatMap(Double.init) : nil
        text = ""
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        if name == "text" { texts.append(text) }
        if name == "text", let group, let tickY, let value = Double(text) { ticks[group, default: []].append((value, tickY)) }
        if name == "g" { group = nil }
    }

    /// The value a height stands for on a panel's axis (read from its first and last labels).
    func value(atY y: Double, in panel: String) -> Double? {
        guard let low = ticks[panel]?.first, let high = ticks[panel]?.last, high.y != low.y else { return nil }
        return low.value + (y - low.y) * (high.value - low.value) / (high.y - low.y)
    }
}
