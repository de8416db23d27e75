import ArgumentParser
import CastlineApp
import LocalIngest
import Foundation

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
    // Stream keys are secrets: from the environment or a file, never the command line (`ps` shows it).
    @Option(help: ArgumentHelp("Only the stream key in this environment variable may publish (repeat for several; "
                               + "with --allow-key-file too); default: any key.", valueName: "name"))
    var allowKeyEnv: [String] = []
    @Option(help: ArgumentHelp("Only the stream key on this file's first line may publish (repeat for several).", valueName: "file"))
    var allowKeyFile: [String] = []
    @Option(help: ArgumentHelp("Keep the CA, the certificate, the ports and the files here (made if needed): started again "
                               + "with the same folder, the ingest is the same server and a publisher reconnects to it.",
                               valueName: "folder"))
    var state: String?

    func validate() throws {
        for port in [rtmpPort, rtmpsPort, httpPort].compactMap({ $0 }) where !(1...65535).contains(port) {
            throw ValidationError("port \(port) is out of range (use 1 to 65535)")
        }
        // An address to listen on, which the certificate is made for: an IP literal (a name would
        // reach openssl and nginx as it is, and fail there in their words).
        var address = in6_addr()
        guard host == "localhost" || inet_pton(AF_INET, host, &address) == 1 || inet_pton(AF_INET6, host, &address) == 1 else {
            throw ValidationError("--host: \"\(host)\" is not an IP address of this machine (try 127.0.0.1, or 0.0.0.0 for every interface)")
        }
    }

    func run() async throws {
        var options = IngestOptions()
        (options.host, options.rtmpPort, options.rtmpsPort, options.httpPort) = (host, rtmpPort, rtmpsPort, httpPort)
        options.workDirectory = state
        let flags = (env: "--allow-key-env", file: "--allow-key-file")
        var keys: [String] = []
        do {
            for source in try allowKeyEnv.compactMap({ try TokenSource(env: $0, file: nil, flags: flags) })
                + allowKeyFile.compactMap({ try TokenSource(env: nil, file: $0, flags: flags) }) {
                keys.append(try source.read())
            }
        } catch {
            throw ValidationError("\(error)")
        }
        let status = await IngestSession.run(options, allowedKeys: keys)
        if status != 0 { throw ExitCode(status) }
    }
}
