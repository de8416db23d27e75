import ArgumentParser
import CastlineApp

struct CtlPauseCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause the running pipeline(s); prints the status after.")

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await call.send("POST", "/pause") }
}
