import ArgumentParser
import CastlineApp

struct CtlEventsCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print the run's events as JSON lines (as --stats-json writes them) until Ctrl-C or the run ends.")

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await call.streamEvents() }
}
