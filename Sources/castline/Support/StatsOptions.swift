import ArgumentParser
import Foundation

/// Where a run's stats go, besides the status line: shared by `run` and `broadcast`.
struct StatsOptions: ParsableArguments {
    @Option(name: .customLong("stats-json"),
            help: ArgumentHelp("Write every event as a JSON line to FILE, or to stdout with -.", valueName: "FILE|-"))
    var json: String?

    @Option(name: .customLong("metrics"),
            help: ArgumentHelp("Serve Prometheus metrics at http://HOST:PORT/metrics while the run lasts, e.g. 127.0.0.1:9464.",
                               valueName: "HOST:PORT"))
    var metrics: String?

    @Option(name: .customLong("stats-plot"),
            help: ArgumentHelp("At the end, draw bitrate and audio level over the run into this SVG file.",
                               valueName: "FILE.svg"))
    var plot: String?

    func validate() throws {
        if let json, json != "-" { try Self.checkWritable(json, option: "--stats-json") }
        if let metrics, Self.endpoint(metrics) == nil {
            throw ValidationError("--metrics: \"\(metrics)\" is not HOST:PORT with a port from 1 to 65535 (try 127.0.0.1:9464)")
        }
        if let plot {
            guard plot.lowercased().hasSuffix(".svg") else {
                throw ValidationError("--stats-plot: \"\(plot)\" should end in .svg (it is an SVG drawing)")
            }
            try Self.checkWritable(plot, option: "--stats-plot")
        }
    }

    /// `host:port` split; `[::1]:9464` for IPv6.
    static func endpoint(_ text: String) -> (host: String, port: Int)? {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port) else {
            return nil
        }
        return (host, port)
    }

    /// The folder must exist: finding out at the end of a long run would lose the figures.
    private static func checkWritable(_ path: String, option: String) throws {
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw ValidationError("\(option): the folder \(folder) does not exist")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw ValidationError("\(option): cannot write in \(folder)")
        }
    }

    /// With a stats output asked for, a stats stage for a shortcut command's pipeline (placed last).
    var stages: [[String: Any]] {
        json == nil && metrics == nil && plot == nil ? [] : [["stats": ["every": "1s"]]]
    }
}
