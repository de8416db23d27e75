import ArgumentParser
import CastlineApp

struct CtlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Control a running castline through its control API (start it with --control HOST:PORT).",
        discussion: """
            The address comes from --control, else the CASTLINE_CONTROL environment variable, else 127.0.0.1:7070.
            Replies print as JSON on stdout; errors are one line on stderr, with exit status 1.
            """,
        subcommands: [
            CtlStatusCommand.self, CtlSetCommand.self, CtlDelayCommand.self, CtlPauseCommand.self, CtlResumeCommand.self,
            CtlSwapCommand.self, CtlPipelineCommand.self, CtlEventsCommand.self,
        ])

    /// Before the subcommand (`ctl --control ADDR status`) as well as after it; after wins.
    @OptionGroup
    var options: CtlOptions
}

/// Where the control API is, its token, and which pipeline: shared by every `ctl` subcommand.
struct CtlOptions: ParsableArguments {
    @Option(name: .customLong("control"),
            help: ArgumentHelp("The control API's address (default: $CASTLINE_CONTROL, else \(ControlCall.defaultAddress)).",
                               valueName: "HOST:PORT"))
    var address: String?
    @Option(help: ArgumentHelp("Send `Authorization: Bearer TOKEN`, TOKEN read from this environment variable.", valueName: "VAR"))
    var tokenEnv: String?
    @Option(help: ArgumentHelp("The same, with TOKEN read from this file (its first line).", valueName: "path"))
    var tokenFile: String?
    @Option(help: ArgumentHelp("The pipeline to talk to, when castline runs several (its name:).", valueName: "name"))
    var pipeline: String?

    /// These options, each one not given here taken from `outer` (the ones before the subcommand).
    func over(_ outer: CtlOptions) -> CtlOptions {
        var merged = self
        merged.address = address ?? outer.address
        merged.tokenEnv = tokenEnv ?? outer.tokenEnv
        merged.tokenFile = tokenFile ?? outer.tokenFile
        merged.pipeline = pipeline ?? outer.pipeline
        return merged
    }

    var call: ControlCall {
        get throws(SettingsError) {
            let token = try TokenSource(env: tokenEnv, file: tokenFile, flags: ("--token-env", "--token-file"))
            return try ControlCall(address: address, token: token, pipeline: pipeline)
        }
    }

    func validate() throws { _ = try checked { () throws(SettingsError) in try call } }
}

/// A `ctl` subcommand that is one request: `run` sends it, a refusal exits non-zero with its lines.
protocol CtlRequest: AsyncParsableCommand {
    var options: CtlOptions { get }
    var ctl: CtlCommand { get }
    func request(_ call: ControlCall) async throws(ControlCall.Failure)
}

extension CtlRequest {
    func run() async throws {
        do {
            try await request(try options.over(ctl.options).call)
        } catch let failure as ControlCall.Failure {
            for line in failure.lines { Terminal.status(line) }
            throw ExitCode(failure.status)
        }
    }
}
