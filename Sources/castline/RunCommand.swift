import ArgumentParser
import CastlineKit
import Foundation

struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a pipeline file until its media ends, or Ctrl-C stops it cleanly.")

    @Argument(help: "The pipeline file (YAML).")
    var file: String

    @Option(name: .customLong("set"),
            help: ArgumentHelp("Override a key of the file, e.g. --set stages[0].encode.video.bitrate=4M.",
                               valueName: "key.path=value"))
    var overrides: [String] = []

    @Option(help: ArgumentHelp("Stop cleanly after this long, e.g. 30s or 1h.", valueName: "duration"))
    var duration: String?

    @OptionGroup(title: "Stats")
    var stats: StatsOptions

    func validate() throws {
        if let duration, Duration(configText: duration) == nil {
            throw ValidationError("--duration: \"\(duration)\" is not a duration (try 30s)")
        }
    }

    func run() async throws {
        let plan = PipelineFiles.load(file, overrides: overrides).orExit()
        let status = await RunSession.run(plan, stopAfter: duration.flatMap(Duration.init(configText:)), stats: stats)
        if status != 0 { throw ExitCode(status) }
    }
}
