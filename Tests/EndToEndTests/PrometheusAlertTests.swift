import Foundation
import LocalIngest
import Testing

/// deploy/prometheus as a user runs it: promtool checks the config and the rules and runs their
/// tests; a real Prometheus scrapes a castline monitoring a stream that goes silent, and sends
/// the alarm's alert, firing, to its Alertmanager.
@Suite("deploy/prometheus: the alert rules, checked and firing", .serialized, .timeLimit(.minutes(2)))
struct PrometheusAlertTests {
    static let folder = Castline.repositoryRoot + "/deploy/prometheus"

    @Test("promtool: the config and rules are valid, and each alert fires after its minute, not before")
    func promtool() async throws {
        for arguments in [["check", "config", "prometheus.yml"], ["check", "rules", "castline-alerts.yml"],
                          ["test", "rules", "castline-alerts.test.yml"]] {
            let result = try await ChildProcess.run("/bin/sh", ["-c", "cd \"$0\" && exec promtool \"$@\"", Self.folder] + arguments)
            #expect(result.status == 0, "promtool \(arguments.joined(separator: " ")): \(result.stdout)\(result.stderr)")
        }
    }

    @Test("castline monitors a stream that goes silent; Prometheus fires CastlineAlarm for it")
    func firing() async throws {
        let scratch = try Scratch()
        try await HLSFixtures.ffmpeg(["-f", "lavfi", "-i", "sine=frequency=1000:sample_rate=48000", "-t", "25",
                                      "-af", "volume=enable='gte(t,2)':volume=0"] + HLSFixtures.codecs(video: false)
                                     + ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_segment_filename", "quiet-%d.ts",
                                        "quiet.m3u8"], in: scratch.path)
        let server = try await HTTPFolder(scratch.path)
        defer { Task { await server.stop() } }
        let ports = try FreePort.find(3)
        let (metricsPort, prometheusPort, alertmanagerPort) = (ports[0], ports[1], ports[2])
        // Prometheus sends each firing alert to its Alertmanager: here a sink that exits once it has CastlineAlarm.
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/webhook_sink.py").path
        let alertmanager = ChildProcess(executable: ChildProcess.which("python3") ?? "/usr/bin/python3",
                                        arguments: [script, "\(alertmanagerPort)", "--accept-first", "--until", "CastlineAlarm"])
        try alertmanager.start()
        defer { Task { await alertmanager.terminate() } }
        try #require(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: alertmanagerPort, timeout: .seconds(10)), "\(alertmanager.standardError)")
        // The shipped rules, their minute made 0 s so that the test waits seconds (promtool's test checks the minute).
        let rules = try String(contentsOfFile: Self.folder + "/castline-alerts.yml", encoding: .utf8)
        #expect(rules.contains("for: 1m"))
        _ = try scratch.write("castline-alerts.yml", rules.replacingOccurrences(of: "for: 1m", with: "for: 0s"))
        let config = try scratch.write("prometheus.yml", """
            global: { scrape_interval: 1s, evaluation_interval: 1s }
            rule_files: [castline-alerts.yml]
            alerting:
              alertmanagers: [{ api_version: v2, static_configs: [{ targets: ["127.0.0.1:\(alertmanagerPort)"] }] }]
            scrape_configs:
              - job_name: castline
                static_configs: [{ targets: ["127.0.0.1:\(metricsPort)"] }]
            """)
        let prometheus = ChildProcess(executable: "/usr/bin/prometheus", arguments: [
            "--config.file=\(config)", "--storage.tsdb.path=\(scratch.file("tsdb"))",
            "--web.listen-address=127.0.0.1:\(prometheusPort)",
        ])
        try prometheus.start()
        defer { Task { await prometheus.terminate() } }
        try #require(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: prometheusPort, timeout: .seconds(20)), "\(prometheus.standardError)")
        let alarms = try scratch.write("alarms.yaml", "silence: { for: 1s }\n")
        let castline = try Castline.start(["monitor", server.url("quiet.m3u8"), "--alarms", alarms, "--metrics", "127.0.0.1:\(metricsPort)"])
        defer { Task { await castline.terminate() } }

        let sent = await alertmanager.waitForExit(timeout: .seconds(25))
        #expect(sent == 0, "no CastlineAlarm sent by Prometheus:\n\(prometheus.standardError)\n\(castline.standardError)")
        let alerts = alertmanager.standardOutput.split(separator: "\n").flatMap { line -> [[String: Any]] in
            let body = line.split(separator: " ", maxSplits: 1).last.map(String.init) ?? ""
            return (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [[String: Any]] ?? []
        }
        let firing = alerts.first { alert in
            let labels = alert["labels"] as? [String: String] ?? [:]
            return labels["alertname"] == "CastlineAlarm" && labels["kind"] == "silence" && labels["pipeline"] == "quiet"
        }
        #expect(firing != nil, "\(alertmanager.standardOutput)")
        let summary = (firing?["annotations"] as? [String: String])?["summary"]
        #expect(summary == "quiet: silence for a minute", "\(firing ?? [:])")
    }
}
