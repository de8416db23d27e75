import ArgumentParser
import CastlineApp
import Foundation

struct CtlSwapCommand: CtlRequest {
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
    @ParentCommand
    var ctl: CtlCommand

    func validate() throws {
        guard inline else { return }
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: file, isDirectory: &isFolder), !isFolder.boolValue else {
            throw ValidationError("\(file): no such file (check the path)")
        }
    }

    func request(_ call: ControlCall) async throws(ControlCall.Failure) { try await call.swap(file: file, inline: inline) }
}
