import ArgumentParser
import CastlineApp

@main
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
