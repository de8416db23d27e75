import CastlineKit
import Foundation
import LocalIngest

/// `castline graph`: the GStreamer graph a pipeline file builds, as Graphviz dot or SVG, secrets masked.
public enum GraphExport {
    /// Prints the dot on stdout, or writes `output` (.dot, or .svg through Graphviz's dot); the exit status.
    public static func run(_ plan: PipelinePlan, file: String, output: String?) async -> Int32 {
        let built: BuiltPipeline
        do {
            try await plan.prepareSource()
            built = try GraphBuilder().build(plan)
        } catch {
            Terminal.status("\(file): \(error)")
            return ExitStatus.badInput
        }
        let dot = SecretMasker(secrets: plan.spec.allSecrets).mask(built.pipeline.dotGraph())
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

    /// nil when written; else the exit status, its line printed.
    private static func writeSVG(_ dot: String, to output: String) async throws -> Int32? {
        guard let program = ChildProcess.which("dot") else {
            Terminal.status("svg needs Graphviz's dot, which is not installed (apt-get install graphviz, or use -o graph.dot)")
            return ExitStatus.badInput
        }
        let dotFile = output + ".dot.tmp"
        try Data(dot.utf8).write(to: URL(fileURLWithPath: dotFile))
        defer { try? FileManager.default.removeItem(atPath: dotFile) }
        let result = try await ChildProcess.run(program, ["-Tsvg", dotFile, "-o", output])
        guard result.status == 0 else {
            Terminal.status("dot failed: \(result.stderr)")
            return ExitStatus.failed
        }
        return nil
    }
}
