import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import HTTPClient
import LocalIngest
import TestSupport
import Testing

/// `castline load` against an origin that misbehaves on purpose (Support/hostile_hls.py).
@Suite("castline load: simulated viewers of one HLS stream", .serialized, .timeLimit(.minutes(2)))
struct LoadTests {
    typealias Origin = HLSBadInputTests.HostileServer

    /// The last running totals a load wrote to stdout.
    private func lastTotals(_ stdout: String) -> [String: Any] {
        jsonLines(stdout).last { $0["event"] as? String == "load" } ?? [:]
    }

    @Test("""
        a segment held back 8 s from every viewer: one stall per viewer, to the count, the held fetch in p95, and the live \
        latency grown by the time stalled; held in the audio rendition beside a clean variant: one stall per viewer, the held \
        fetch in p99; a clean stream: no \
        stall, the latency the origin's programme times give
        """)
    func stallsCounted() async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch, run: true)
        defer { Task { await origin.stop() } }
        // Two viewers played through the normal pipeline: what their own runs show (their first PLAYING, each
        // time buffering) agrees with the simulated players' buffers.
        async let decodedRun = Castline.run(["load", origin.url("stall.m3u8"), "--viewers", "2", "--ramp", "100/s", "--duration", "14s",
                                             "--decode", "1", "--stats-json", "-"], timeout: .seconds(60))
        // 20 viewers started within 0.2 s: all fetch the held segment (2 after the edge when the first asked).
        let plot = scratch.file("load.svg")
        // The clean stream at the same time: a path of its own on the same origin.
        async let cleanRun = Castline.run(["load", origin.url("live.m3u8"), "--viewers", "10", "--ramp", "20/s", "--duration", "8s",
                                           "--stats-json", "-"], timeout: .seconds(60))
        // Viewers whose variant is clean and whose audio rendition (EXT-X-MEDIA) is the held one: a player stalls when either runs dry.
        async let audioHeldRun = Castline.run(["load", origin.url("with-audio.m3u8"), "--viewers", "5", "--ramp", "100/s", "--duration", "14s",
                                               "--stats-json", "-"], timeout: .seconds(60))
        let held = try await Castline.run(["load", origin.url("stall.m3u8"), "--viewers", "20", "--ramp", "100/s", "--duration", "14s",
                                           "--stats-json", "-", "--stats-plot", plot], timeout: .seconds(60))
        #expect(held.status == 0, "\(held.stderr)")
        let totals = lastTotals(held.stdout)
        #expect(totals["viewers_started"] as? Double == 20 && totals["viewers_failed"] as? Double == 0, "\(totals)")
        #expect(totals["stalls"] as? Double == 20, "\(totals)")
        // Each stall lasts the 8 s hold less what the buffer held then (2 to 8 s of media).
        let stalled = totals["stall_s"] as? Double ?? 0
        #expect(stalled > 20 * 0.5 && stalled < 20 * 6.5, "stalled \(stalled) s in all")
        #expect((totals["fetch_p95_s"] as? Double ?? 0) > 7.9, "\(totals)")
        #expect((totals["ttff_p95_s"] as? Double ?? 9) < 1, "\(totals)")
        #expect(held.stderr.contains("summary: viewers 0 active, 20 started, 0 failed"), "\(held.stderr)")
        // A viewer's latency (wall clock minus the programme time it plays) grows by exactly the time it stalled:
        // between a reading before any stall and the last, the mean latency grows by the mean stall.
        let readings = jsonLines(held.stdout).filter { $0["event"] as? String == "load" }
        let before = try #require(readings.first { $0["viewers_playing"] as? Double == 20 && $0["stalls"] as? Double == 0 }, "\(readings)")
        let after = try #require(readings.last)
        #expect(after["viewers_playing"] as? Double == 20, "\(after)")
        let grown = (after["latency_mean_s"] as? Double ?? 0) - (before["latency_mean_s"] as? Double ?? 0)
        #expect(abs(grown - stalled / 20) < 0.05, "latency grew \(grown) s, the mean stall was \(stalled / 20) s")
        // Started 2 segments behind the edge (the newest whole when listed): 6 s behind, plus up to one segment's wait.
        let first = before["latency_mean_s"] as? Double ?? 0
        #expect(first > 5.9 && first < 8.3, "latency at the start \(first) s")
        try checkPlot(plot, readings: readings)

        let audioHeld = try await audioHeldRun
        #expect(audioHeld.status == 0, "\(audioHeld.stderr)")
        let audioTotals = lastTotals(audioHeld.stdout)
        #expect(audioTotals["stalls"] as? Double == 5 && audioTotals["viewers_failed"] as? Double == 0, "\(audioTotals)")
        // Twice the fetches of one track, 5 of them held: past the p95's rank, within the p99's.
        #expect((audioTotals["fetch_p99_s"] as? Double ?? 0) > 7.9, "\(audioTotals)")
        let audioStalled = audioTotals["stall_s"] as? Double ?? 0
        #expect(audioStalled > 5 * 0.5 && audioStalled < 5 * 6.5, "stalled \(audioStalled) s in all")

        let decoded = try await decodedRun
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let played = lastTotals(decoded.stdout)
        #expect(played["stalls"] as? Double == 2 && played["viewers_failed"] as? Double == 0, "\(played)")
        #expect((played["ttff_p99_s"] as? Double ?? 9) < 1, "\(played)")
        let decodedStall = (played["stall_s"] as? Double ?? 0) / 2
        #expect(abs(decodedStall - stalled / 20) < 0.3, "a decoded viewer stalled \(decodedStall) s, a simulated one \(stalled / 20) s")
        // Its latency, the programme time its own source measured, grows by the time it stalled.
        let decodedReadings = jsonLines(decoded.stdout).filter { $0["event"] as? String == "load" }
        let calmBefore = try #require(decodedReadings.first { $0["stalls"] as? Double == 0 && $0["latency_mean_s"] != nil },
                                      "\(decodedReadings)")
        let decodedGrown = (played["latency_mean_s"] as? Double ?? 0) - (calmBefore["latency_mean_s"] as? Double ?? 0)
        #expect(abs(decodedGrown - decodedStall) < 0.1, "latency grew \(decodedGrown) s, the stall was \(decodedStall) s: \(decoded.stdout)")

        let clean = try await cleanRun
        #expect(clean.status == 0, "\(clean.stderr)")
        let calm = lastTotals(clean.stdout)
        #expect(calm["stalls"] as? Double == 0 && calm["http_errors"] as? Double == 0 && calm["viewers_active"] as? Double == 10, "\(calm)")
        let (p50, p95) = (calm["latency_p50_s"] as? Double ?? 0, calm["latency_p95_s"] as? Double ?? 0)
        #expect(p50 > 5.9 && p95 < 8.3, "latency p50 \(p50) s p95 \(p95) s")
    }

    /// The SVG report: well-formed, one point per reading in each series, and what it draws reads
    /// back (through its own axis labels) as the figures of the JSON lines.
    private func checkPlot(_ path: String, readings: [[String: Any]]) throws {
        let reader = SVGReader()
        let parser = XMLParser(data: try Data(contentsOf: URL(fileURLWithPath: path)))
        parser.delegate = reader
        #expect(parser.parse(), "\(parser.parserError.map { "\($0)" } ?? "")")
        for (panel, name, figure) in [("viewers", "active", "viewers_active"), ("stalls", "stalls", "stalls"), ("latency", "p50", "latency_p50_s")] {
            let series = try #require(reader.series.first { $0.series == panel && $0.name == name }, "\(panel) \(name): \(reader.series.map(\.name))")
            let values = readings.compactMap { $0[figure] as? Double }
            #expect(series.points == values.count, "\(panel) \(name)")
            for (point, value) in zip(series.coordinates, values) {
                let drawn = reader.value(atY: point.y, in: panel) ?? .nan
                #expect(abs(drawn - value) < 0.02 * max(1, value), "\(panel) \(name): drawn \(drawn), read \(value)")
            }
        }
        #expect(reader.texts.contains { $0.hasPrefix("viewers 0 active, 20 started, 0 failed") }, "the summary under the title")
    }

    @Test("rendition auto: each viewer starts on the first variant listed and moves to what its throughput carries (on loopback, the high); lowest stays")
    func renditions() async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        // The three at once: each reads the same playlist for its own viewers.
        async let autoRun = Castline.run(["load", origin.url("abr.m3u8"), "--viewers", "6", "--ramp", "20/s", "--duration", "3s",
                                          "--stats-json", "-"], timeout: .seconds(60))
        async let lowestRun = Castline.run(["load", origin.url("abr.m3u8"), "--viewers", "3", "--ramp", "20/s", "--duration", "3s",
                                            "--rendition", "lowest", "--stats-json", "-"], timeout: .seconds(60))
        async let unknownRun = Castline.run(["load", origin.url("abr.m3u8"), "--viewers", "2", "--duration", "1s", "--rendition", "1080p",
                                             "--stats-json", "-"])
        let auto = try await autoRun
        #expect(auto.status == 0, "\(auto.stderr)")
        let moved = lastTotals(auto.stdout)
        #expect(moved["rendition_switches"] as? Double == 6 && moved["viewers_rendition_high_500k"] as? Double == 6, "\(moved)")
        #expect(moved["viewers_rendition_low_50k"] == nil && moved["stalls"] as? Double == 0, "\(moved)")
        let lowest = try await lowestRun
        let stayed = lastTotals(lowest.stdout)
        #expect(stayed["rendition_switches"] as? Double == 0 && stayed["viewers_rendition_low_50k"] as? Double == 3, "\(stayed)")
        let unknown = try await unknownRun
        #expect(unknown.status == 1 && unknown.stderr.contains("no rendition \"1080p\" in the playlist (it has: low ? 50k; high ? 500k)"),
                "\(unknown.stderr)")
        #expect(lastTotals(unknown.stdout)["http_errors"] as? Double == 0, "a rendition not there is no HTTP error")
    }

    @Test("a process that falls behind says so: stopped (SIGSTOP) until the origin has listed two new segments, its timers read that late, and the note is on stderr")
    func fallsBehind() async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        let load = try Castline.start(["load", origin.url("live.m3u8"), "--viewers", "3", "--ramp", "10/s", "--duration", "8s",
                                       "--stats-json", "-"])
        defer { Task { await load.terminate() } }
        #expect(await waitUntil(.seconds(20), every: .milliseconds(50)) { load.standardOutput.contains("\"event\":\"load\"") })
        let playlist = try #require(URL(string: origin.url("live.m3u8")))
        func sequence() async -> Int? {
            guard let response = try? await HTTPFetcher.shared.fetch("GET", playlist) else { return nil }
            return String(decoding: response.body, as: UTF8.self).firstMatch(of: /EXT-X-MEDIA-SEQUENCE:(\d+)/).flatMap { Int($0.output.1) }
        }
        let before = try #require(await sequence())
        load.signal(SIGSTOP)
        let stopped = ContinuousClock.now
        #expect(await waitUntil(.seconds(10), every: .milliseconds(50)) { (await sequence() ?? 0) >= before + 2 })
        let stoppedFor = (ContinuousClock.now - stopped) / .seconds(1)
        load.signal(SIGCONT)
        let status = await load.waitForExit(timeout: .seconds(30))
        await load.waitForOutput()
        #expect(status == 0, "\(load.standardError)")
        // The timer due while it was stopped fires as it goes on: late by the stop, less up to its 100 ms period.
        let worst = jsonLines(load.standardOutput).compactMap { $0["timer_lag_ms"] as? Double }.max() ?? 0
        #expect(worst >= stoppedFor * 1000 - 150 && worst <= stoppedFor * 1000 + 500, "timers \(worst) ms late after a \(stoppedFor) s stop")
        #expect(load.standardError.contains("note: this process fell behind its viewers (its timers up to"), "\(load.standardError)")
    }

    @Test("an origin with nothing there: every viewer failed, HTTP 404 counted, one line naming it, exit 1; an RTMP server not there: exit 1; a URL castline does not load: exit 64")
    func failures() async throws {
        let scratch = try Scratch()
        let origin = try await Origin(scratch: scratch)
        defer { Task { await origin.stop() } }
        let missing = try await Castline.run(["load", origin.url("nothing.m3u8"), "--viewers", "3", "--ramp", "50/s", "--duration", "1s",
                                              "--stats-json", "-"], timeout: .seconds(30))
        #expect(missing.status == 1, "\(missing.stderr)")
        #expect(missing.stderr.contains("error: every viewer failed: the server answered HTTP 404"), "\(missing.stderr)")
        let totals = lastTotals(missing.stdout)
        #expect(totals["viewers_failed"] as? Double == 3 && totals["http_errors_404"] as? Double == 3, "\(totals)")
        // An RTMP server that is not there: each viewer's first connection refused, one line, the key unshown.
        let rtmp = try await Castline.run(["load", "rtmp://127.0.0.1:\(try FreePort.find())/live", "--key-env", "LOAD_KEY", "--viewers", "2",
                                           "--duration", "1s"], environment: ["LOAD_KEY": "hidden-key-42"], timeout: .seconds(30))
        #expect(rtmp.status == 1 && rtmp.stderr.contains("error: every viewer failed: Connection refused"), "\(rtmp.stderr)")
        #expect(!rtmp.stderr.contains("hidden-key-42"))
        let ftp = try await Castline.run(["load", "ftp://127.0.0.1/live.m3u8", "--viewers", "3"])
        #expect(ftp.status == 64 && ftp.stderr.contains("is not a URL castline loads"), "\(ftp.stderr)")
    }
}

/// deploy/kubernetes as a cluster would run it, here: the manifests checked against a named
/// Kubernetes version, and four shard processes (JOB_COMPLETION_INDEX set, the Job's own
/// arguments) scraped by a real Prometheus, whose fleet-wide figures are read back.
@Suite("deploy/kubernetes: the load fleet", .serialized, .timeLimit(.minutes(2)))
struct LoadFleetTests {
    static let folder = Castline.repositoryRoot + "/deploy/kubernetes"

    @Test("the Job and ConfigMap validate against Kubernetes 1.31 (strict); the Job's shards, completions and parallelism agree; the PodMonitor selects its pods and port")
    func manifests() async throws {
        let validate = try await ChildProcess.run(Castline.repositoryRoot + "/.venv/bin/kubernetes-validate",
                                                  ["-k", "1.31.0", "--strict", Self.folder + "/load-job.yaml"])
        #expect(validate.status == 0 && validate.stdout.contains("passed for resource job/castline-load"), "\(validate.stdout)\(validate.stderr)")
        // kubernetes-validate has no schema for the Operator's PodMonitor: what it must agree with is checked here.
        let check = try await ChildProcess.run(ControlPageTests.python, ["-c", """
            import sys, yaml
            job = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d["kind"] == "Job"][0]
            monitor = yaml.safe_load(open(sys.argv[2]))
            spec, pod = job["spec"], job["spec"]["template"]
            container = pod["spec"]["containers"][0]
            shards = int(container["args"][container["args"].index("--shard") + 1].split("/")[1])
            assert spec["completionMode"] == "Indexed" and spec["completions"] == spec["parallelism"] == shards, (spec, shards)
            labels = pod["metadata"]["labels"]
            assert all(labels.get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items()), labels
            ports = [p["name"] for p in container["ports"]]
            assert all(e["port"] in ports for e in monitor["spec"]["podMetricsEndpoints"]), ports
            print("agree")
            """, Self.folder + "/load-job.yaml", Self.folder + "/podmonitor.yaml"])
        #expect(check.status == 0 && check.stdout.contains("agree"), "\(check.stdout)\(check.stderr)")
    }

    @Test("four shards of 24 viewers, each with its JOB_COMPLETION_INDEX, scraped by Prometheus: the fleet's active viewers sum to 24, its p95 time to first frame and live latency read back")
    func fleet() async throws {
        let scratch = try Scratch()
        let origin = try await HLSBadInputTests.HostileServer(scratch: scratch)
        defer { Task { await origin.stop() } }
        let allPorts = try FreePort.find(5)
        let (ports, prometheusPort) = (Array(allPorts.prefix(4)), allPorts[4])
        let targets = ports.map { "\"127.0.0.1:\($0)\"" }.joined(separator: ", ")
        let config = try scratch.write("prometheus.yml", """
            global: { scrape_interval: 1s }
            scrape_configs:
              - job_name: castline-load
                static_configs: [{ targets: [\(targets)] }]
            """)
        let prometheus = ChildProcess(executable: "/usr/bin/prometheus", arguments: [
            "--config.file=\(config)", "--storage.tsdb.path=\(scratch.file("tsdb"))", "--web.listen-address=127.0.0.1:\(prometheusPort)",
        ])
        try prometheus.start()
        defer { Task { await prometheus.terminate() } }
        try #require(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: prometheusPort, timeout: .seconds(20)), "\(prometheus.standardError)")
        // The Job's own arguments: the same command line in every pod, the index from the environment.
        let shards = try ports.enumerated().map { index, port in
            try Castline.start(["load", origin.url("live.m3u8"), "--viewers", "24", "--ramp", "24/s", "--duration", "10s",
                                "--shard", "/4", "--metrics", "127.0.0.1:\(port)"], environment: ["JOB_COMPLETION_INDEX": "\(index)"])
        }
        defer { for shard in shards { Task { await shard.terminate() } } }

        let active = try await Self.query(prometheusPort, "sum(castline_load_viewers{state=\"active\"})", until: { $0 == 24 })
        #expect(active == 24)
        let started = try await Self.query(prometheusPort, "sum(castline_load_viewers{state=\"started\"})", until: { $0 == 24 })
        #expect(started == 24)
        let ttff = try await Self.query(prometheusPort, "histogram_quantile(0.95, sum by (le) (castline_load_ttff_seconds_bucket))",
                                        until: { $0 > 0 })
        // The origin is on loopback: each viewer's first segment comes within the first buckets.
        #expect(ttff > 0 && ttff <= 0.25, "fleet p95 time to first frame \(ttff) s")
        let count = try await Self.query(prometheusPort, "sum(castline_load_ttff_seconds_count)", until: { $0 == 24 })
        #expect(count == 24, "every viewer's first frame counted once, fleet-wide")
        // Live latency: each shard's viewers now, by how far behind live, summed over the fleet.
        let behind = try await Self.query(prometheusPort, "sum(castline_load_viewers_behind_live_seconds{le=\"+Inf\"})", until: { $0 == 24 })
        #expect(behind == 24, "every playing viewer's latency counted, fleet-wide")
        let latency = try await Self.query(prometheusPort, "histogram_quantile(0.95, sum by (le) (castline_load_viewers_behind_live_seconds))",
                                           until: { $0 > 0 })
        // 2 segments behind the edge when each started: 6 to 8 s (the buckets' bounds around it: 6, 7, 8, 10).
        #expect(latency > 5.9 && latency <= 10, "fleet p95 live latency \(latency) s")
        // Each shard ends by itself once its time is over, its metrics server with it.
        for shard in shards {
            let status = await shard.waitForExit(timeout: .seconds(30))
            #expect(status == 0 && shard.standardError.contains("summary: viewers 0 active, 6 started, 0 failed"), "\(shard.standardError)")
        }
    }

    /// Asks Prometheus `expression` each 0.5 s (a scrape a second) until `until` holds of its value,
    /// or 20 s pass; the last value.
    static func query(_ port: Int, _ expression: String, until: (Double) -> Bool) async throws -> Double {
        var components = URLComponents(string: "http://127.0.0.1:\(port)/api/v1/query")
        components?.queryItems = [URLQueryItem(name: "query", value: expression)]
        // A form's query reads "+" as a space: `le="+Inf"` must reach Prometheus as written.
        let query = components?.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        components?.percentEncodedQuery = query
        let url = try #require(components?.url)
        var last = -1.0
        _ = await waitUntil(.seconds(20), every: .milliseconds(500)) {
            guard let response = try? await HTTPFetcher.shared.fetch("GET", url),
                  let body = try? JSONSerialization.jsonObject(with: response.body) as? [String: Any],
                  let result = ((body["data"] as? [String: Any])?["result"] as? [[String: Any]])?.first,
                  let text = (result["value"] as? [Any])?.last as? String, let value = Double(text) else { return false }
            last = value
            return until(value)
        }
        return last
    }
}
