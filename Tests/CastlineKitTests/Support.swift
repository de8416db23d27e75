import Foundation
import CastlineKit
import StagePlugins

/// Loads a pipeline from YAML text with the real registry.
func loadSpec(_ yaml: String, environment: [String: String] = [:]) throws -> PipelineSpec {
    try PipelineLoader(catalog: ComponentRegistry.builtin, environment: environment).load(yaml: yaml, file: "test.yaml")
}

/// Every element's factory name in a bin, depth first.
func factories(in bin: Bin) -> [String] {
    elements(in: bin).map { $0.factoryName ?? ($0 is Bin ? "bin" : "?") }
}

/// Every element in a bin, depth first (not inside the decoders, which make theirs as media flows).
func elements(in bin: Bin) -> [Element] {
    bin.children.flatMap { child -> [Element] in
        if let inner = child as? Bin, !(child.factoryName.map(["uridecodebin3", "decodebin"].contains) ?? false) {
            return [child] + elements(in: inner)
        }
        return [child]
    }
}

/// Packet times per stream ("audio", "video") of a media file, from ffprobe: `field` is
/// pts_time (sorted) or dts_time (in file order).
func packetTimes(_ path: String, field: String = "pts_time") throws -> [String: [Double]] {
    let probe = Process()
    probe.executableURL = URL(fileURLWithPath: "/usr/bin/ffprobe")
    probe.arguments = ["-v", "error", "-show_entries", "packet=codec_type,\(field)", "-of", "csv=p=0", path]
    let pipe = Pipe()
    probe.standardOutput = pipe
    try probe.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    probe.waitUntilExit()
    var times: [String: [Double]] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let fields = line.split(separator: ",")
        guard fields.count >= 2, let time = Double(fields[1]) else { continue }
        times[String(fields[0]), default: []].append(time)
    }
    return field == "pts_time" ? times.mapValues { $0.sorted() } : times
}

/// The largest step between consecutive times (infinity for fewer than two).
func largestGap(_ times: [Double]) -> Double {
    zip(times, times.dropFirst()).map { $1 - $0 }.max() ?? .infinity
}
