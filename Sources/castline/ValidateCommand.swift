import ArgumentParser
import CastlineApp

struct ValidateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "validate",
        abstract: "Check pipeline files without running them: one `FILE: ok` line each, or the errors.")

    @Argument(help: "Pipeline files (YAML).")
    var files: [String]
    @Option(name: .customLong("set"),
            help: ArgumentHelp("Override a key in every file, e.g. --set name=test.", valueName: "key.path=value"))
    var overrides: [String] = []

    func validate() throws {
        if files.isEmpty { throw ValidationError("give at least one pipeline file (e.g. castline validate pipelines/*.yaml)") }
    }

    func run() async throws {
        if !PipelineFiles.check(files, overrides: overrides) { throw ExitCode(ExitStatus.badInput) }
    }
}
