import ArgumentParser
import CastlineApp
import CastlineKit
import Foundation

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run pipeline files until their media ends, or Ctrl-C stops them cleanly.",
        discussion: """
            Several files run side by side as independent pipelines, each under its own name
            (its `name:`, which must differ between files) in events and metrics.
            With --watch, a changed file is checked and applied to its running pipeline; a file
            that does not validate is reported and the pipeline runs on unchanged. SIGHUP does the same.
            """)

    @Argument(help: "The pipeline files (YAML).")
    var files: [String]
    @Option(name: .customLong("set"),
            help: ArgumentHelp("Override a key of every file, e.g. --set stages[0].encode.video.bitrate=4M.",
                               valueName: "key.path=value"))
    var overrides: [String] = []
    @Option(parsing: .unconditional, help: ArgumentHelp("Stop cleanly after this long, e.g. 30s or 1h.", valueName: "duration"))
    var duration: Duration?
    @Flag(help: "Watch the files: apply each one to its pipeline when it changes (also on SIGHUP).")
    var watch = false
    @OptionGroup(title: "Stats")
    var stats: StatsOptions
    @OptionGroup(title: "Control")
    var control: ControlOptions

    func validate() throws {
        if files.isEmpty { throw ValidationError("give a pipeline file (e.g. castline run pipelines/tone-to-wav.yaml)") }
        try duration?.requireAbove0("--duration", example: "30s")
    }

    func run() async throws {
        let entries = files.map { file in
            RunSession.Entry(plan: PipelineFiles.load(file, overrides: overrides).orExit(), file: file, overrides: overrides)
        }
        if let clash = RunSession.sameName(entries) {
            Terminal.status(clash)
            throw ExitCode(ExitStatus.badInput)
        }
        let options = RunSession.Options(stopAfter: duration, stats: stats.settings,
                                          control: try control.settings, watch: watch)
        let status = await RunSession.run(entries, options: options)
        if status != 0 { throw ExitCode(status) }
    }
}
