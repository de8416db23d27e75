import ArgumentParser
import CastlineApp

struct CtlPipelineCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "Print the running pipeline file (secrets as ****).")

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await call.send("GET", "/pipeline") }
}
