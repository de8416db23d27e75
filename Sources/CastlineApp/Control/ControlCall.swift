import CastlineKit
import Foundation

/// One `castline ctl` request: where the control API is, its token, which
/// pipeline; replies judged and printed the same way for every subcommand.
public struct ControlCall: Sendable {
    public static let defaultAddress = "127.0.0.1:7070"

    /// A refused or failed request: its lines for stderr, and the exit status (1 unless what was given is at fault).
    public struct Failure: Error {
        public let lines: [String]
        public var status: Int32

        public init(lines: [String], status: Int32 = ExitStatus.failed) {
            self.lines = lines
            self.status = status
        }
    }

    let client: ControlClient
    let pipeline: String?

    /// `address` nil: $CASTLINE_CONTROL, else the default.
    public init(address: String?, token: TokenSource?, pipeline: String?) throws(SettingsError) {
        let resolved = address ?? ProcessInfo.processInfo.environment["CASTLINE_CONTROL"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.defaultAddress
        guard let endpoint = Endpoint(resolved) else {
            let from = address == nil ? "CASTLINE_CONTROL" : "--control"
            throw SettingsError("\(from): \"\(resolved)\" is not HOST:PORT with a port from 1 to 65535 (try \(Self.defaultAddress))")
        }
        if let pipeline, pipeline.isEmpty { throw SettingsError("--pipeline: give the pipeline's name") }
        client = ControlClient(host: endpoint.host, port: endpoint.port, token: try token?.read())
        self.pipeline = pipeline
    }

    /// The request target: `path`, with `?pipeline=NAME` when one was named, and any further query items.
    func target(_ path: String, query: [URLQueryItem] = []) -> String {
        var components = URLComponents()
        components.path = path
        let items = (pipeline.map { [URLQueryItem(name: "pipeline", value: $0)] } ?? []) + query
        if !items.isEmpty { components.queryItems = items }
        return components.string ?? path
    }

    /// Sends a request and prints a successful reply readably on stdout.
    public func send(_ method: String, _ path: String, query: [URLQueryItem] = [], body: Data? = nil,
                     contentType: String? = nil) async throws(Failure) {
        let reply: ControlClient.Reply
        do {
            reply = try await client.send(method, target(path, query: query), body: body, contentType: contentType)
        } catch {
            throw Failure(lines: ["\(error)"])
        }
        try Self.check(reply)
        Self.printReadably(reply)
    }

    /// Prints each server-sent event's JSON as a line on stdout until the run ends.
    public func streamEvents() async throws(Failure) {
        let refusal: ControlClient.Reply?
        do {
            refusal = try await client.stream(target("/events")) { line in
                guard line.hasPrefix("data:") else { return true }  // comments and blank separators
                let json = line.dropFirst("data:".count).drop { $0 == " " }
                // Whoever read the events has gone (`| head`): done.
                return FileHandle.standardOutput.writeDiscardingErrors(Data((json + "\n").utf8))
            }
        } catch {
            throw Failure(lines: ["\(error)"])
        }
        if let refusal { try Self.check(refusal) }
    }

    /// The API's error line (and its error lines, for a refused swap) unless the reply is a success.
    static func check(_ reply: ControlClient.Reply) throws(Failure) {
        guard !(200..<300).contains(reply.status) else { return }
        let object = (try? JSONSerialization.jsonObject(with: reply.body)) as? [String: Any]
        let message = object?["error"] as? String ?? reply.text.trimmingCharacters(in: .whitespacesAndNewlines)
        throw Failure(lines: ["HTTP \(reply.status): \(message.isEmpty ? "no reason given" : message)"]
            + (object?["errors"] as? [String] ?? []).map { "  \($0)" })
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

extension ControlCall {
    /// The stage command named `name`, and what `text` asks of it (`+1`, `-1`, `12s`, `-6dB`).
    public static func adjustment(_ name: String, _ text: String) throws(SettingsError) -> (StageCommand, StageAdjustment) {
        let commands = PipelineFiles.registry.commands
        guard let command = commands.first(where: { $0.name == name }) else {
            throw SettingsError("no stage takes \"\(name)\" (commands: \(commands.map(\.name).sorted().joined(separator: ", ")))")
        }
        guard let adjustment = command.adjustment(from: text) else {
            if StageAdjustment.isSignedAmount(text, range: command.range) {
                throw SettingsError("\"\(text)\": a sign moves \(command.name) by whole steps (+1, -2; a step is the stage's `step`); "
                                    + "to set it, give the value without a sign")
            }
            // A value in the command's own words, but past what it takes: say what it takes.
            if let value = command.parseValue(text), !command.range.contains(value) {
                let shown = { (bound: Double) in bound.rounded() == bound ? String(Int(bound)) : String(bound) }
                throw SettingsError("\"\(text)\" is out of range for \(command.name) (from \(shown(command.range.lowerBound)) "
                                    + "to \(shown(command.range.upperBound)))")
            }
            throw SettingsError("\"\(text)\" is neither a step (+1, -1) nor a \(command.name) (\(command.summary))")
        }
        return (command, adjustment)
    }

    /// `POST /NAME` with the adjustment; prints the status after.
    public func perform(_ command: StageCommand, _ adjustment: StageAdjustment) async throws(Failure) {
        let body: [String: Double] = switch adjustment {
        case .set(let value): [command.valueField: value]
        case .step(let steps): ["step": Double(steps)]
        }
        let data = (try? JSONEncoder().encode(body)) ?? Data()
        try await send("POST", "/\(command.name)", body: data, contentType: "application/json")
    }

    /// `POST /swap`: the file's path made absolute, or with `inline` its text (named by the file's name).
    public func swap(file: String, inline: Bool) async throws(Failure) {
        guard inline else {
            let path = URL(fileURLWithPath: file).standardizedFileURL.path
            let body = (try? JSONEncoder().encode(["path": path])) ?? Data()
            return try await send("POST", "/swap", body: body, contentType: "application/json")
        }
        guard let text = FileManager.default.contents(atPath: file) else {
            throw Failure(lines: ["\(file): cannot read the file (check its permissions)"], status: ExitStatus.badInput)
        }
        // The file's name names the text in errors, and the pipeline when the text has no name:.
        let origin = URL(fileURLWithPath: file).lastPathComponent
        try await send("POST", "/swap", query: [URLQueryItem(name: "origin", value: origin)], body: text,
                       contentType: "application/yaml")
    }
}
