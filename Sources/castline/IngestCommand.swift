import ArgumentParser
import CastlineApp
import CastlineKit
import Foundation
import LocalIngest

struct IngestCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ingest",
        abstract: "Run a local RTMP/RTMPS ingest (nginx-rtmp behind stunnel) that serves what is published as HLS.",
        discussion: "Prints the publish and playback URLs, runs until Ctrl-C, then stops both servers and removes their files.")

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

    func validate() throws {
        for port in [rtmpPort, rtmpsPort, httpPort].compactMap({ $0 }) where !(1...65535).contains(port) {
            throw ValidationError("port \(port) is out of range (use 1 to 65535)")
        }
    }

    func run() async throws {
        var options = IngestOptions()
        options.host = host
        options.rtmpPort = rtmpPort
        options.rtmpsPort = rtmpsPort
        options.httpPort = httpPort
        options.allowedKeys = allowKey.isEmpty ? nil : Set(allowKey)
        let server = IngestServer(options: options)
        let endpoints: IngestEndpoints
        do {
            endpoints = try await server.start()
        } catch {
            Terminal.status("ingest: \(error)")
            throw ExitCode(ExitStatus.failed)
        }
        print("rtmp publish:  \(endpoints.rtmpURL)/<key>")
        print("rtmps publish: \(endpoints.rtmpsURL)/<key>   (--ca-file \(endpoints.caFile))")
        print("hls playback:  \(endpoints.hlsURLPattern)")
        print("certificate sha256: \(endpoints.certificateSHA256)")
        fflush(nil)  // a script reading the URLs must not wait for exit
        Terminal.status("ingest running; Ctrl-C stops it")
        let stopped = AsyncStream<Void>.makeStream()
        let trap = SignalTrap(first: { stopped.continuation.finish() }, second: { Foundation.exit(130) })
        for await _ in stopped.stream {}
        await server.stop()
        withExtendedLifetime(trap) {}
        Terminal.status("ingest stopped")
    }
}
