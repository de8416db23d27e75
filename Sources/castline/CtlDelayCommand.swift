import ArgumentParser
import CastlineApp

struct CtlDelayCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "delay",
        abstract: "Move or set the delay behind live of a pipeline with a delay stage; prints the status after.",
        discussion: """
            castline ctl delay +1     one step further behind live (a step is the stage's `step`, 1 s by default)
            castline ctl delay -1     one step nearer
            castline ctl delay 12s    12 s behind live (clamped to the history held)
            The same as `castline ctl set delay CHANGE`.
            """)

    // `-1` looks like an option to the parser: take whatever it does not recognise.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("+N or -N steps, or a delay such as 12s.", valueName: "change"))
    var change: [String] = []

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func validate() throws { _ = try CtlSetCommand.parse("delay", change) }

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await CtlSetCommand.perform("delay", change, call) }
}
