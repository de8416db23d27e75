import ArgumentParser
import CastlineApp
import Foundation

struct CtlSwapCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "swap",
        abstract: "Apply another pipeline file to the running pipeline, rebuilding only what changed.",
        discussion: """
            castline reads the file itself (its path is sent made absolute), or, with --inline,
            receives its text, for a castline on another machine. A file that does not validate
            is refused with its errors and the running pipeline is left as it was.
            """)

    @Argument(help: ArgumentHelp("The new pipeline file (YAML).", valueName: "file"))
    var file: String

    @Flag(help: "Send the file's text rather than its path.")
    var inline = false

    @OptionGroup
    var options: CtlOptions

    func validate() throws {
        guard inline else { return }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue else {
            throw ValidationError("\(file): no such file (check the path)")
        }
    }

    func run() async throws {
        if inline {
            guard let text = FileManager.default.contents(atPath: file) else {
                Terminal.status("\(file): cannot read the file (check its permissions)")
                throw ExitCode(ExitStatus.badInput)
            }
            // The file's name names the text in errors, and the pipeline when the text has no name:.
            let origin = URL(fileURLWithPath: file).lastPathComponent
            try await options.run { call throws(ControlCall.Failure) in
                try await call.send("POST", "/swap", query: [URLQueryItem(name: "origin", value: origin)],
                                    body: text, contentType: "application/yaml")
            }
        } else {
            let path = URL(fileURLWithPath: file).standardizedFileURL.path
            let body = try JSONSerialization.data(withJSONObject: ["path": path], options: [.withoutEscapingSlashes])
            try await options.run { call throws(ControlCall.Failure) in
                try await call.send("POST", "/swap", body: body, contentType: "application/json")
            }
        }
    }
}
