import ArgumentParser
import CastlineApp
import Foundation

@main
enum Entry {
    static func main() async {
        // A reader that goes away (`castline … | head`) is a failed write, not the end of the run:
        // the recording still has to be finished.
        signal(SIGPIPE, SIG_IGN)
        await Castline.main()
    }
}

struct Castline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "castline",
        abstract: "Drive GStreamer from declarative pipeline files: broadcast, listen, tap stats, swap live.",
        discussion: "Status goes to stderr, machine output to stdout.",
        version: CastlineVersion.current,
        subcommands: [
            RunCommand.self, BroadcastCommand.self, ListenCommand.self, ValidateCommand.self, StagesCommand.self, GraphCommand.self,
            DoctorCommand.self, IngestCommand.self, CtlCommand.self, LatencyCommand.self, MonitorCommand.self, LoadCommand.self,
        ]
    )
}
