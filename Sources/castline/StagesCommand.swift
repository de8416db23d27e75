import ArgumentParser
import CastlineApp

struct StagesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stages",
        abstract: "List every source, stage and sink kind with its options, types, defaults and help.")

    @Argument(help: "Show only this kind, e.g. delay.")
    var kind: String?

    func run() async throws {
        for line in try checked({ () throws(SettingsError) in try StageList.lines(kind: kind) }) { print(line) }
    }
}
