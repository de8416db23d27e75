import ArgumentParser
import CastlineApp

struct CtlPipelineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "Print the running pipeline file (secrets as ****).")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        try await options.run { call throws(ControlCall.Failure) in try await call.send("GET", "/pipeline") }
    }
}
