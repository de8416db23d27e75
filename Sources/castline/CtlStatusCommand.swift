import ArgumentParser

struct CtlStatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Print the state, position, delay and latest stats of the running pipeline(s), as JSON.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        CtlOptions.printReadably(try await options.send("GET", "/status"))
    }
}
