import ArgumentParser
import CastlineApp

struct GraphCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "graph",
        abstract: "Draw what a pipeline file builds (source, stages, sinks and the streams between them), as Graphviz dot or SVG.")

    @Argument(help: "The pipeline file (YAML).")
    var file: String
    @Option(name: .shortAndLong, help: ArgumentHelp("Write to this file: .dot, or .svg (needs Graphviz's dot).", valueName: "path"))
    var output: String?
    @Flag(help: "GStreamer's own dump instead: every element and pad, and the pipelines sinks run of their own (an RTMP publish).")
    var gst = false
    @Option(name: .customLong("set"), help: ArgumentHelp("Override a key of the file.", valueName: "key.path=value"))
    var overrides: [String] = []

    func validate() throws {
        if let output, !output.hasSuffix(".dot"), !output.hasSuffix(".svg") {
            throw ValidationError("-o \(output): end it in .dot or .svg")
        }
        if let output { try checked { () throws(SettingsError) in try SettingsError.checkWritable(output, option: "-o \(output)") } }
    }

    func run() async throws {
        let status = await GraphExport.run(PipelineFiles.load(file, overrides: overrides, checkOnly: true).orExit(), file: file, output: output, gst: gst)
        if status != 0 { throw ExitCode(status) }
    }
}
