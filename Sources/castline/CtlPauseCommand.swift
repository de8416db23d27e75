import ArgumentParser
import CastlineApp

struct CtlPauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause the running pipeline(s); prints the status after.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        try await options.run { call throws(ControlCall.Failure) in try await call.send("POST", "/pause") }
    }
}
