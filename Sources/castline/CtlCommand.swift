import ArgumentParser
import Foundation

struct CtlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Control a running castline through its control API (start it with --control HOST:PORT).",
        discussion: """
            The address comes from --control, else the CASTLINE_CONTROL environment variable, else 127.0.0.1:7070.
            Replies print as JSON on stdout; errors are one line on stderr, with exit status 1.
            """,
        subcommands: [
            CtlStatusCommand.self, CtlDelayCommand.self, CtlPauseCommand.self, CtlResumeCommand.self,
            CtlSwapCommand.self, CtlPipelineCommand.self, CtlEventsCommand.self,
        ])
}

/// Where the control API is, its token, and which pipeline: shared by every `ctl` subcommand.
struct CtlOptions: ParsableArguments {
    static let defaultAddress = "127.0.0.1:7070"

    @Option(name: .customLong("control"),
            help: ArgumentHelp("The control API's address (default: $CASTLINE_CONTROL, else \(Self.defaultAddress)).",
                               valueName: "HOST:PORT"))
    var address: String?

    @Option(help: ArgumentHelp("Send `Authorization: Bearer TOKEN`, TOKEN read from this environment variable.", valueName: "VAR"))
    var tokenEnv: String?

    @Option(help: ArgumentHelp("The same, with TOKEN read from this file (its first line).", valueName: "path"))
    var tokenFile: String?

    @Option(help: ArgumentHelp("The pipeline to talk to, when castline runs several (its name:).", valueName: "name"))
    var pipeline: String?

    func validate() throws {
        if StatsOptions.endpoint(resolvedAddress) == nil {
            let from = address == nil ? "CASTLINE_CONTROL" : "--control"
            throw ValidationError("\(from): \"\(resolvedAddress)\" is not HOST:PORT with a port from 1 to 65535 (try \(Self.defaultAddress))")
        }
        if let pipeline, pipeline.isEmpty { throw ValidationError("--pipeline: give the pipeline's name") }
        _ = try TokenSource(env: tokenEnv, file: tokenFile, flags: ("--token-env", "--token-file"))?.read()
    }

    var resolvedAddress: String {
        address ?? ProcessInfo.processInfo.environment["CASTLINE_CONTROL"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultAddress
    }

    func client() throws -> ControlClient {
        let (host, port) = StatsOptions.endpoint(resolvedAddress) ?? ("127.0.0.1", 7070)
        let token = try TokenSource(env: tokenEnv, file: tokenFile, flags: ("--token-env", "--token-file"))?.read()
        return ControlClient(host: host, port: port, token: token)
    }

    /// The request target: `path`, with `?pipeline=NAME` when one was named, and any further query items.
    func target(_ path: String, query: [URLQueryItem] = []) -> String {
        var components = URLComponents()
        components.path = path
        let items = (pipeline.map { [URLQueryItem(name: "pipeline", value: $0)] } ?? []) + query
        if !items.isEmpty { components.queryItems = items }
        return components.string ?? path
    }

    /// Sends a request; a refusal or a connection problem is printed as one line and exits 1.
    func send(_ method: String, _ path: String, query: [URLQueryItem] = [], body: Data? = nil,
              contentType: String? = nil) async throws -> ControlClient.Reply {
        let reply: ControlClient.Reply
        do {
            reply = try await client().send(method, target(path, query: query), body: body, contentType: contentType)
        } catch let failure as ControlClient.Failure {
            Terminal.status("\(failure)")
            throw ExitCode(ExitStatus.failed)
        }
        try Self.check(reply)
        return reply
    }

    /// Exits 1 with the API's error line (and its error lines, for a refused swap) unless the reply is a success.
    static func check(_ reply: ControlClient.Reply) throws {
        guard !(200..<300).contains(reply.status) else { return }
        let object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
        let message = object?["error"] as? String ?? reply.text.trimmingCharacters(in: .whitespacesAndNewlines)
        Terminal.status("HTTP \(reply.status): \(message.isEmpty ? "no reason given" : message)")
        for line in object?["errors"] as? [String] ?? [] { Terminal.status("  \(line)") }
        throw ExitCode(ExitStatus.failed)
    }

    /// A JSON reply, indented for people; other replies as they came.
    static func printReadably(_ reply: ControlClient.Reply) {
        guard let object = try? JSONSerialization.jsonObject(with: reply.body),
              let data = try? JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        else {
            print(reply.text, terminator: reply.text.hasSuffix("\n") ? "" : "\n")
            return
        }
        print(String(decoding: data, as: UTF8.self))
    }
}
