import ArgumentParser

struct CtlResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume paused pipeline(s); prints the status after.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        CtlOptions.printReadably(try await options.send("POST", "/resume"))
    }
}
