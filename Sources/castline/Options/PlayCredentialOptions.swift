import ArgumentParser

/// What it takes to play an RTMP or SRT stream: its key or passphrase, from the environment or a
/// file, never an argument. Shared by `listen` and `load`.
struct PlayCredentialOptions: ParsableArguments {
    @Option(help: ArgumentHelp("rtmp: read the stream key, added to the URL's path, from this environment variable.", valueName: "VAR"))
    var keyEnv: String?
    @Option(help: ArgumentHelp("rtmp: read the stream key from this file.", valueName: "path"))
    var keyFile: String?
    @Option(help: ArgumentHelp("srt: the passphrase is in this environment variable.", valueName: "VAR"))
    var passphraseEnv: String?
    @Option(help: ArgumentHelp("whep: the bearer token, from this environment variable.", valueName: "VAR"))
    var tokenEnv: String?
    @Option(help: ArgumentHelp("whep: the bearer token, from this file.", valueName: "path"))
    var tokenFile: String?
}
