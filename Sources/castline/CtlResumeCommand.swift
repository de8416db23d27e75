import ArgumentParser
import CastlineApp

struct CtlResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume paused pipeline(s); prints the status after.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        try await options.run { call throws(ControlCall.Failure) in try await call.send("POST", "/resume") }
    }
}
