import CastlineKit
import Foundation
import LocalIngest

/// `castline graph`: what a pipeline file builds, as Graphviz dot or SVG, secrets masked: castline's
/// own picture (parts and the streams between them), or with `gst` GStreamer's full dump of every
/// element, the pipelines sinks run of their own (an RTMP publish) drawn beside it.
public enum GraphExport {
    /// Prints the dot on stdout, or writes `output` (.dot, or .svg through Graphviz's dot); the exit status.
    public static func run(_ plan: PipelinePlan, file: String, output: String?, gst: Bool = false) async -> Int32 {
        let built: BuiltPipeline
        do {
            try await plan.prepareSource()
            built = try GraphBuilder().build(plan)
        } catch {
            // The plan's masker knows every secret, and the URIs that hold them, as the components used them.
            Terminal.status("\(file): \(plan.channel.masker.mask("\(error)"))")
            return ExitStatus.badInput
        }
        let picture = gst ? gstDump(built) : PipelinePicture.dot(built)
        let dot = plan.channel.masker.mask(picture)
        guard let output else {
            print(dot)
            return 0
        }
        do {
            if output.hasSuffix(".svg") {
                if let status = try await writeSVG(dot, to: output) { return status }
            } else {
                try Data(dot.utf8).write(to: URL(fileURLWithPath: output))
            }
        } catch {
            Terminal.status("-o \(output): \(error.localizedDescription)")
            return ExitStatus.failed
        }
        Terminal.status("wrote \(output)")
        return 0
    }

    /// GStreamer's dump of the main pipeline, each sink's own pipelines as clusters inside it.
    static func gstDump(_ built: BuiltPipeline) -> String {
        let main = built.pipeline.dotGraph()
        let own = built.plan.sinks.flatMap { part in part.component.ownPipelines.map { (part.spec.keyPath, $0) } }
        guard !own.isEmpty, let close = main.range(of: "}", options: .backwards) else { return main }
        var merged = String(main[..<close.lowerBound])
        for (index, (keyPath, pipeline)) in own.enumerated() {
            // Its own `digraph pipeline {` opens a cluster instead; node names are addresses, so unique.
            let body = pipeline.dotGraph().drop { $0 != "{" }.dropFirst()
            merged += "subgraph cluster_own\(index) {\n  label=\"\(keyPath): its own pipeline, fed by its appsinks\";\n" + body + "\n"
        }
        return merged + "}\n"
    }

    /// nil when written; else the exit status, its line printed.
    private static func writeSVG(_ dot: String, to output: String) async throws -> Int32? {
        do {
            try Data(try await svg(dot).utf8).write(to: URL(fileURLWithPath: output))
            return nil
        } catch let error as GraphvizError {
            Terminal.status(error.description)
            return error.missing ? ExitStatus.badInput : ExitStatus.failed
        }
    }

    struct GraphvizError: Error, CustomStringConvertible {
        let description: String
        var missing = false
    }

    /// The dot drawn as SVG by Graphviz's `dot` (the one way castline draws its picture).
    static func svg(_ dot: String) async throws -> String {
        guard let program = ChildProcess.which("dot") else {
            throw GraphvizError(description: "svg needs Graphviz's dot, which is not installed (apt-get install graphviz, or use -o graph.dot)",
                                missing: true)
        }
        let dotFile = FileManager.default.temporaryDirectory.appendingPathComponent("castline-graph-\(UUID().uuidString).dot").path
        try Data(dot.utf8).write(to: URL(fileURLWithPath: dotFile))
        defer { try? FileManager.default.removeItem(atPath: dotFile) }
        let result = try await ChildProcess.run(program, ["-Tsvg", dotFile])
        guard result.status == 0 else { throw GraphvizError(description: "dot failed: \(result.stderr)") }
        return result.stdout
    }
}
