import ArgumentParser
import Foundation

struct CtlEventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print the run's events as JSON lines (as --stats-json writes them) until Ctrl-C or the run ends.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        let client = try options.client()
        do {
            let refusal = try await client.stream(options.target("/events")) { line in
                guard line.hasPrefix("data:") else { return }  // comments and blank separators
                let json = line.dropFirst("data:".count).drop { $0 == " " }
                FileHandle.standardOutput.write(Data((json + "\n").utf8))
            }
            if let refusal { try CtlOptions.check(refusal) }
        } catch let failure as ControlClient.Failure {
            Terminal.status("\(failure)")
            throw ExitCode(ExitStatus.failed)
        }
    }
}
