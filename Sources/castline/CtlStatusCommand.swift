import ArgumentParser
import CastlineApp

struct CtlStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the state, position, delay and latest stats of the running pipeline(s), as JSON.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        try await options.run { call throws(ControlCall.Failure) in try await call.send("GET", "/status") }
    }
}
