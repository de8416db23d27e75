import ArgumentParser

struct CtlPauseCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause the running pipeline(s); prints the status after.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        CtlOptions.printReadably(try await options.send("POST", "/pause"))
    }
}
