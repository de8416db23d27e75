import ArgumentParser
import CastlineApp
import CastlineKit
import Foundation
import LocalIngest

struct GraphCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Print the GStreamer graph a pipeline file builds, as Graphviz dot (or SVG).")

    @Argument(help: "The pipeline file (YAML).")
    var file: String

    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file: .dot, or .svg (needs Graphviz's dot).", valueName: "path"))
    var output: String?

    @Option(name: .customLong("set"), help: ArgumentHelp("Override a key of the file.", valueName: "key.path=value"))
    var overrides: [String] = []

    func validate() throws {
        if let output, !output.hasSuffix(".dot"), !output.hasSuffix(".svg") {
            throw ValidationError("-o \(output): end it in .dot or .svg")
        }
    }

    func run() async throws {
        let plan = PipelineFiles.load(file, overrides: overrides).orExit()
        let built: BuiltPipeline
        do {
            try await plan.prepareSource()
            built = try GraphBuilder().build(plan)
        } catch {
            Terminal.status("\(file): \(error)")
            throw ExitCode(ExitStatus.badInput)
        }
        let dot = SecretMasker(secrets: plan.spec.allSecrets).mask(built.pipeline.dotGraph())
        guard let output else {
            print(dot)
            return
        }
        if output.hasSuffix(".svg") {
            try await writeSVG(dot, to: output)
        } else {
            try Data(dot.utf8).write(to: URL(fileURLWithPath: output))
        }
        Terminal.status("wrote \(output)")
    }

    private func writeSVG(_ dot: String, to output: String) async throws {
        guard let program = ChildProcess.which("dot") else {
            Terminal.status("svg needs Graphviz's dot, which is not installed (apt-get install graphviz, or use -o graph.dot)")
            throw ExitCode(ExitStatus.badInput)
        }
        let dotFile = output + ".dot.tmp"
        try Data(dot.utf8).write(to: URL(fileURLWithPath: dotFile))
        defer { try? FileManager.default.removeItem(atPath: dotFile) }
        let result = try await ChildProcess.run(program, ["-Tsvg", dotFile, "-o", output])
        guard result.status == 0 else {
            Terminal.status("dot failed: \(result.stderr)")
            throw ExitCode(ExitStatus.failed)
        }
    }
}
