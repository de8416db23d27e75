import ArgumentParser
import Foundation
import CastlineApp
import CastlineKit
import StagePlugins

struct MonitorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "monitor",
        abstract: "Watch streams for trouble: silence, loudness, clipping, a black or frozen picture, raised as alarms (nothing is played).",
        discussion: """
            Each URL is read as `listen --output null` reads it, through a stats stage and an alarms stage; only what a
            check reads is decoded. Alarms are events (alarm-raised, alarm-cleared) on stderr, in --stats-json, at
            GET /alarms of --control and as castline_alarm_active in --metrics.
            --alarms FILE holds the alarms stage's options, e.g.
              silence: { below: -50, for: 10s }
              frozen: { on: false }
            """)

    @Argument(help: "The streams: HLS playlist URLs, rtmp:// or srt:// URLs.")
    var urls: [String]
    @Option(help: ArgumentHelp("The alarms stage's options, from this YAML file (see `castline stages`).", valueName: "path"))
    var alarms: String?
    @Flag(help: "Audio checks only: video is neither decoded nor, where the playlist allows, downloaded.")
    var audioOnly = false
    @Option(help: ArgumentHelp("Stop at the first of these alarms, exit status 3 (e.g. silence,black).", valueName: "kind,..."))
    var failOn: String?
    @Option(help: ArgumentHelp("POST each alarm raised or cleared to this URL, as its JSON line (retried while it fails).",
                               valueName: "url"))
    var webhook: String?
    @Option(help: ArgumentHelp("The same, the URL read from this environment variable: for a URL that carries a secret, kept out of `ps`.",
                               valueName: "VAR"))
    var webhookEnv: String?
    @Option(help: ArgumentHelp("The same, the URL read from this file's first line.", valueName: "path"))
    var webhookFile: String?
    @Option(parsing: .unconditional, help: ArgumentHelp("A stream has ended when its playlist listed no new media for this long (a server that cannot be reached is retried until it is back).", valueName: "duration"))
    var endAfter = Duration.seconds(30)
    @OptionGroup
    var printing: ShortcutOptions
    @OptionGroup(title: "Stats")
    var stats: StatsOptions
    @OptionGroup(title: "Control")
    var control: ControlOptions

    var shortcut: MonitorShortcut {
        var made = MonitorShortcut(urls: urls)
        (made.audioOnly, made.endAfter, made.stats) = (audioOnly, endAfter, stats.settings)
        return made
    }

    func validate() throws {
        try checked { () throws(SettingsError) in
            try shortcut.validate()
            _ = try failOnKinds
            _ = try webhookURL
        }
    }

    /// `--webhook`, `--webhook-env` or `--webhook-file`: an http(s) URL (one read is never echoed).
    var webhookURL: URL? {
        get throws(SettingsError) {
            if [webhook, webhookEnv, webhookFile].compactMap({ $0 }).count > 1 {
                throw SettingsError("give --webhook, --webhook-env or --webhook-file, only one")
            }
            let read = try TokenSource(env: webhookEnv, file: webhookFile, flags: ("--webhook-env", "--webhook-file"), noun: "URL")
            let given: String? = if let webhook { webhook } else { try read?.read() }
            guard let text = given else { return nil }
            let flag = webhook != nil ? "--webhook" : webhookEnv != nil ? "--webhook-env \(webhookEnv ?? "")" : "--webhook-file \(webhookFile ?? "")"
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host != nil else {
                throw SettingsError("\(flag): not an http:// or https:// URL (try https://hooks.example.com/castline)")
            }
            return url
        }
    }

    /// `--fail-on silence,black`, each a kind castline knows.
    var failOnKinds: Set<AlarmKind> {
        get throws(SettingsError) {
            var kinds: Set<AlarmKind> = []
            for word in (failOn ?? "").split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                guard let kind = AlarmKind(rawValue: word) else {
                    throw SettingsError("--fail-on: \"\(word)\" is not an alarm (alarms: \(AlarmKind.allCases.map(\.rawValue).joined(separator: ", ")))")
                }
                kinds.insert(kind)
            }
            return kinds
        }
    }

    func run() async throws {
        var shortcut = shortcut
        if let alarms { shortcut.alarms = PipelineFiles.alarmOptions(alarms).orExit() }
        var options = RunSession.Options(stopAfter: printing.duration, stats: stats.settings, control: try control.settings)
        options.stopOnWallClock = true
        options.failOn = try failOnKinds
        options.webhook = try webhookURL
        let status = await RunSession.run(origin: "castline monitor", printOnly: printing.printPipeline, options: options,
                                          shortcut.listens.map { $0.spec })
        if status != 0 { throw ExitCode(status) }
    }
}
