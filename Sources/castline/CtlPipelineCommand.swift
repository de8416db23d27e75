import ArgumentParser

struct CtlPipelineCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "Print the running pipeline file (secrets as ****).")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        let reply = try await options.send("GET", "/pipeline")
        print(reply.text, terminator: "")
    }
}
