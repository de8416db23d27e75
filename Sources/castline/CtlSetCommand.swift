import ArgumentParser
import CastlineApp
import CastlineKit

struct CtlSetCommand: CtlRequest {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Give a running stage one of its commands (delay, gain): a value or +N/-N steps; prints the status after.",
        discussion: """
            castline ctl set delay 12s    castline ctl set delay +1
            castline ctl set gain -6dB    castline ctl set gain -2
            """)

    @Argument(help: ArgumentHelp("The command: a stage's (delay, gain).", valueName: "command"))
    var command: String

    // `-1` looks like an option to the parser: take whatever it does not recognise.
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("+N or -N steps, or a value such as 12s or -6dB.", valueName: "change"))
    var change: [String] = []

    @OptionGroup
    var options: CtlOptions
    @ParentCommand
    var ctl: CtlCommand

    func validate() throws { _ = try Self.parse(command, change) }

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await Self.perform(command, change, call) }

    static func parse(_ command: String, _ change: [String]) throws -> (StageCommand, StageAdjustment) {
        guard change.count == 1, let text = change.first else {
            throw ValidationError("give one change: +1, -1 or a value (castline ctl set \(command) --help)")
        }
        return try checked { () throws(SettingsError) in try ControlCall.adjustment(command, text) }
    }

    /// Sends what `validate` checked.
    static func perform(_ command: String, _ change: [String], _ call: ControlCall) async throws(ControlCall.Failure) {
        guard let (stageCommand, adjustment) = try? parse(command, change) else { throw ControlCall.Failure(lines: ["internal: unchecked change"]) }
        try await call.perform(stageCommand, adjustment)
    }
}
