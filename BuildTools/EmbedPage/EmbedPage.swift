import Foundation
import PackagePlugin

/// Embeds the control page (the target's `Control/Page/` folder) into the target as `PageFiles`,
/// so `--control` serves it from the binary alone.
@main
struct EmbedPage: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) async throws -> [Command] {
        let folder = target.directoryURL.appending(path: "Control/Page")
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path()).filter { !$0.hasPrefix(".") }.sorted()
        let inputs = names.map { folder.appending(path: $0) }
        let output = context.pluginWorkDirectoryURL.appending(path: "PageFiles.swift")
        return [.buildCommand(
            displayName: "Embedding the control page",
            executable: try context.tool(named: "EmbedFiles").url,
            arguments: [output.path(), "PageFiles"] + inputs.map { $0.path() },
            inputFiles: inputs, outputFiles: [output])]
    }
}
