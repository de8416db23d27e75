import ArgumentParser
import CastlineApp

struct CtlStatusCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the state, position, delay and latest stats of the running pipeline(s), as JSON.")

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await call.send("GET", "/status") }
}
