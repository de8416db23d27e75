import ArgumentParser
import CastlineApp
import LocalIngest

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Run a local RTMP/RTMPS ingest (nginx-rtmp behind stunnel) that serves what is published as HLS.",
        discussion: """
            Prints the publish and playback URLs, runs until Ctrl-C, then stops both servers and removes their files \
            (with --state, keeps them).
            """)

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"
    @Option(help: "RTMP port (default: a free one).")
    var rtmpPort: Int?
    @Option(help: "RTMPS port (default: a free one).")
    var rtmpsPort: Int?
    @Option(help: "HTTP port for HLS playback (default: a free one).")
    var httpPort: Int?
    @Option(help: ArgumentHelp("Only this stream key may publish (repeat for several); default: any key.", valueName: "key"))
    var allowKey: [String] = []
    @Option(help: ArgumentHelp("Keep the CA, the certificate, the ports and the files here (made if needed): started again "
                               + "with the same folder, the ingest is the same server and a publisher reconnects to it.",
                               valueName: "folder"))
    var state: String?

    func validate() throws {
        for port in [rtmpPort, rtmpsPort, httpPort].compactMap({ $0 }) where !(1...65535).contains(port) {
            throw ValidationError("port \(port) is out of range (use 1 to 65535)")
        }
    }

    func run() async throws {
        var options = IngestOptions()
        (options.host, options.rtmpPort, options.rtmpsPort, options.httpPort) = (host, rtmpPort, rtmpsPort, httpPort)
        options.workDirectory = state
        let status = await IngestSession.run(options, allowedKeys: allowKey)
        if status != 0 { throw ExitCode(status) }
    }
}
