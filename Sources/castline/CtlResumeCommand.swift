import ArgumentParser
import CastlineApp

struct CtlResumeCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume paused pipeline(s); prints the status after.")

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await call.send("POST", "/resume") }
}
