import ArgumentParser
import CastlineApp
import Foundation

struct CtlEventsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "events",
        abstract: "Print the run's events as JSON lines (as --stats-json writes them) until Ctrl-C or the run ends.")

    @OptionGroup
    var options: CtlOptions

    func run() async throws {
        try await options.run { call throws(ControlCall.Failure) in try await call.streamEvents() }
    }
}
