import ArgumentParser
import Foundation

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

    func validate() throws {
        guard let address else {
            if tokenEnv != nil || tokenFile != nil {
                throw ValidationError("--control-token-env/--control-token-file go with --control HOST:PORT")
            }
            return
        }
        guard let (host, _) = StatsOptions.endpoint(address) else {
            throw ValidationError("--control: \"\(address)\" is not HOST:PORT with a port from 1 to 65535 (try 127.0.0.1:7070)")
        }
        let token = try TokenSource(env: tokenEnv, file: tokenFile, flags: ("--control-token-env", "--control-token-file"))
        if token == nil, !Self.isLoopback(host) {
            throw ValidationError(
                "--control \(address) listens beyond this machine: give a token with --control-token-env VAR or --control-token-file PATH")
        }
        _ = try token?.read()
    }

    /// Where to listen, when asked to.
    var endpoint: (host: String, port: Int)? { address.flatMap(StatsOptions.endpoint) }

    /// The token every request must carry, if one was given (checked in `validate`).
    func token() throws -> String? {
        try TokenSource(env: tokenEnv, file: tokenFile, flags: ("--control-token-env", "--control-token-file"))?.read()
    }

    /// Loopback: `localhost`, 127.0.0.0/8 and ::1.
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// A secret token from an environment variable or a file, as the stream key
/// is taken: never from an argument, never printed.
struct TokenSource {
    enum Origin {
        case environment(String)
        case file(String)
    }

    let origin: Origin
    let flags: (env: String, file: String)

    /// nil when neither is given; throws when both are.
    init?(env: String?, file: String?, flags: (env: String, file: String)) throws {
        self.flags = flags
        switch (env, file) {
        case (nil, nil): return nil
        case (let env?, nil): origin = .environment(env)
        case (nil, let file?): origin = .file(file)
        case (.some, .some): throw ValidationError("give \(flags.env) or \(flags.file), not both")
        }
    }

    /// The token; throws a one-line error naming the variable or file (never the token).
    func read() throws -> String {
        let token: String
        switch origin {
        case .environment(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw ValidationError("\(flags.env) \(name): the environment variable is not set")
            }
            token = value
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw ValidationError("\(flags.file) \(path): cannot read the file")
            }
            token = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        }
        let trimmed = token.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else {
            switch origin {
            case .environment(let name): throw ValidationError("\(flags.env) \(name): the token is empty")
            case .file(let path): throw ValidationError("\(flags.file) \(path): the token is empty")
            }
        }
        return trimmed
    }
}
