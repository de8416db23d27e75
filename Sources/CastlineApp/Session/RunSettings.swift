import CastlineKit
import StagePlugins
import Foundation

/// A setting that cannot be used: one line naming the flag and the fix.
public struct SettingsError: Error, CustomStringConvertible, Sendable {
    public let description: String

    public init(_ description: String) {
        self.description = description
    }

    /// The folder of an output file must exist: finding out at the end of a long run would lose what it holds.
    public static func checkWritable(_ path: String, option: String) throws(SettingsError) {
        var isFolder: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) {
            // There already (a file, or a device such as /dev/null): it is written in place.
            guard !isFolder.boolValue else { throw SettingsError("\(option): \(path) is a folder (give the path of a file in it)") }
            guard FileManager.default.isWritableFile(atPath: path) else { throw SettingsError("\(option): cannot write \(path)") }
            return
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw SettingsError("\(option): the folder \(folder) does not exist")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw SettingsError("\(option): cannot write in \(folder)")
        }
    }

    /// An output file opened for writing, made empty; opened in place, never replaced by a new
    /// file, so a device (`/dev/null`) stays a device (FileManager.createFile writes a new file and
    /// renames it over the path).
    public static func openForWriting(_ path: String, option: String) throws(SettingsError) -> FileHandle {
        try checkWritable(path, option: option)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw SettingsError("\(option): cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
    }
}

/// Where a run's stats go besides the status line (`--stats-json`, `--metrics`, `--stats-plot`).
public struct StatsSettings: Sendable {
    public var json: String?
    public var metrics: String?
    public var plot: String?
    /// A line on stdout for each latency reading (`castline latency`).
    public var latencyLines: Bool

    public init(json: String? = nil, metrics: String? = nil, plot: String? = nil, latencyLines: Bool = false) {
        self.json = json
        self.metrics = metrics
        self.plot = plot
        self.latencyLines = latencyLines
    }

    public func validate() throws(SettingsError) {
        if let json, json != "-" { try SettingsError.checkWritable(json, option: "--stats-json") }
        if let metrics, Endpoint(metrics) == nil {
            throw SettingsError("--metrics: \"\(metrics)\" is not HOST:PORT with a port from 1 to 65535 (try 127.0.0.1:9464)")
        }
        if let plot {
            guard plot.lowercased().hasSuffix(".svg") else {
                throw SettingsError("--stats-plot: \"\(plot)\" should end in .svg (it is an SVG drawing)")
            }
            try SettingsError.checkWritable(plot, option: "--stats-plot")
        }
    }

    /// With a stats output asked for, a stats stage for a shortcut command's pipeline (placed last).
    public var stages: [ComponentSpec] {
        json == nil && metrics == nil && plot == nil ? [] : [ComponentSpec(kind: StatsStage.kind)]
    }
}

/// `HOST:PORT`, `[::1]:9464` for IPv6.
public struct Endpoint: Sendable, Equatable {
    public let host: String
    public let port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public init?(_ text: String) {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port) else {
            return nil
        }
        self.host = host
        self.port = port
    }

    /// Loopback: `localhost`, 127.0.0.0/8 and ::1.
    public var isLoopback: Bool {
        if host == "localhost" || host == "::1" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }
}

/// The control API for a run (`--control HOST:PORT` and its token).
public struct ControlSettings: Sendable {
    public var address: String?
    public var token: TokenSource?
    /// `--ui`: the page at `/`, on a free loopback port unless `--control` names one, its URL printed.
    public var ui: Bool

    public init(address: String? = nil, token: TokenSource? = nil, ui: Bool = false) {
        self.address = address
        self.token = token
        self.ui = ui
    }

    public func validate() throws(SettingsError) {
        guard let address else {
            if let token, !ui { throw SettingsError("\(token.flags.env)/\(token.flags.file) go with --control HOST:PORT or --ui") }
            _ = try token?.read()
            return
        }
        guard let endpoint = Endpoint(address) else {
            throw SettingsError("--control: \"\(address)\" is not HOST:PORT with a port from 1 to 65535 (try 127.0.0.1:7070)")
        }
        if token == nil, !endpoint.isLoopback {
            throw SettingsError(
                "--control \(address) listens beyond this machine: give a token with --control-token-env VAR or --control-token-file PATH")
        }
        _ = try token?.read()
    }

    var endpoint: Endpoint? {
        guard let address else { return ui ? Endpoint(host: "127.0.0.1", port: 0) : nil }
        return Endpoint(address)
    }
}

/// A secret token from an environment variable or a file, as the stream key
/// is taken: never from an argument, never printed.
public struct TokenSource: Sendable {
    enum Origin: Sendable {
        case environment(String)
        case file(String)
    }

    let origin: Origin
    /// The flags that give it, for messages.
    public let flags: (env: String, file: String)
    /// What it is, for messages: a token, a URL.
    let noun: String

    /// nil when neither is given; throws when both are.
    public init?(env: String?, file: String?, flags: (env: String, file: String), noun: String = "token") throws(SettingsError) {
        self.flags = flags
        self.noun = noun
        switch (env, file) {
        case (nil, nil): return nil
        case (let env?, nil): origin = .environment(env)
        case (nil, let file?): origin = .file(file)
        case (.some, .some): throw SettingsError("give \(flags.env) or \(flags.file), not both")
        }
    }

    /// The token; throws a one-line error naming the variable or file (never the token).
    public func read() throws(SettingsError) -> String {
        let token: String
        switch origin {
        case .environment(let name):
            guard let value = ProcessInfo.processInfo.environment[name] else {
                throw SettingsError("\(flags.env) \(name): the environment variable is not set")
            }
            token = value
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw SettingsError("\(flags.file) \(path): cannot read the file")
            }
            token = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        }
        let trimmed = token.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else {
            switch origin {
            case .environment(let name): throw SettingsError("\(flags.env) \(name): the \(noun) is empty")
            case .file(let path): throw SettingsError("\(flags.file) \(path): the \(noun) is empty")
            }
        }
        return trimmed
    }
}
