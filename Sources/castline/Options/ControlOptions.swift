import ArgumentParser
import CastlineApp

/// `--control HOST:PORT` and its token, shared by `run`, `listen` and `broadcast`.
struct ControlOptions: ParsableArguments {
    @Option(name: .customLong("control"),
            help: ArgumentHelp("Serve the control API at http://HOST:PORT while the run lasts (e.g. 127.0.0.1:7070; see `castline ctl`).",
                               valueName: "HOST:PORT"))
    var address: String?
    @Option(name: .customLong("control-token-env"),
            help: ArgumentHelp("Require `Authorization: Bearer TOKEN` on every control request, TOKEN read from this environment variable (needed to bind beyond loopback).",
                               valueName: "VAR"))
    var tokenEnv: String?
    @Option(name: .customLong("control-token-file"),
            help: ArgumentHelp("The same, with TOKEN read from this file (its first line).", valueName: "path"))
    var tokenFile: String?
    @Flag(name: .customLong("ui"),
          help: "Serve the control page (and API) on a free loopback port and print its URL; with --control, at that address.")
    var ui = false

    var settings: ControlSettings {
        get throws(SettingsError) {
            ControlSettings(address: address, token: try TokenSource(
                env: tokenEnv, file: tokenFile, flags: ("--control-token-env", "--control-token-file")), ui: ui)
        }
    }

    func validate() throws { try checked { () throws(SettingsError) in try settings.validate() } }
}
