import ArgumentParser
import CastlineApp
import CastlineKit
import Foundation

struct CtlDelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delay",
        abstract: "Move or set the delay behind live of a pipeline with a delay stage; prints the status after.",
        discussion: """
            castline ctl delay +1     one step further behind live (a step is the stage's `step`, 1 s by default)
            castline ctl delay -1     one step nearer
            castline ctl delay 12s    12 s behind live (clamped to the history held)
            """)

    // `-1` looks like an option to the parser: take whatever it does not recognise.
    @Argument(parsing: .allUnrecognized,
              help: ArgumentHelp("+N or -N steps, or a delay such as 12s.", valueName: "change"))
    var change: [String] = []

    @OptionGroup
    var options: CtlOptions

    enum Change: Equatable {
        case step(Int)
        case seconds(Double)
    }

    /// `+2` and `-1` are steps; `12s`, `1m30s` a delay.
    static func parse(_ text: String) -> Change? {
        if let sign = text.first, sign == "+" || sign == "-", let steps = Int(text.dropFirst()) {
            return .step(sign == "-" ? -steps : steps)
        }
        guard !text.hasPrefix("-"), !text.hasPrefix("+"), Int(text) == nil,
              let duration = Duration(configText: text) else { return nil }
        return .seconds(duration.seconds)
    }

    func validate() throws {
        guard change.count == 1, let text = change.first else {
            throw ValidationError("give one change: +1, -1 or a delay such as 12s")
        }
        guard Self.parse(text) != nil else {
            throw ValidationError("\"\(text)\" is neither a step (+1, -1) nor a delay (12s, 1m30s)")
        }
    }

    func run() async throws {
        guard let text = change.first, let parsed = Self.parse(text) else { throw ExitCode(ExitStatus.badInput) }
        let body: [String: Any] = switch parsed {
        case .step(let steps): ["step": steps]
        case .seconds(let seconds): ["seconds": seconds]
        }
        let data = try JSONSerialization.data(withJSONObject: body)
        try await options.run { call throws(ControlCall.Failure) in
            try await call.send("POST", "/delay", body: data, contentType: "application/json")
        }
    }
}
