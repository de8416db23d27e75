import Foundation
import Glibc
import LocalIngest
import Testing

/// A publisher's verdict comes from the far end: "published" only for what a real server took,
/// exit 1 when nothing was.
@Suite("publish verdicts, end to end", .serialized, .timeLimit(.minutes(3)))
struct PublishVerdictTests {
    static let key = "verdict-\(UInt32.random(in: 100_000...999_999))"

    @Test("rtmps:// to nginx's plain RTMP port: nothing published, one line naming the likely cause, exit 1, no segment at the ingest")
    func tlsToPlainPort() async throws {
        try await withIngest { _, endpoints in
            let url = "rtmps://127.0.0.1:\(endpoints.rtmpPort)/live"
            let result = try await Castline.run([
                "broadcast", url, "--key-env", "K", "--insecure", "--size", "320x240", "--duration", "8s",
            ], environment: ["K": Self.key], timeout: .seconds(40))
            #expect(result.status == 1, "\(result.stderr)")
            #expect(result.stderr.contains("error: nothing was published"), "\(result.stderr)")
            #expect(result.stderr.contains("if that port speaks plain RTMP, use rtmp://127.0.0.1:\(endpoints.rtmpPort)/live"), "\(result.stderr)")
            #expect(!result.stderr.contains("rtmp: published"), "\(result.stderr)")
            #expect(!result.stderr.contains("reconnected"), "\(result.stderr)")
            #expect(endpoints.published(key: Self.key).segments.isEmpty)
        }
    }

    @Test("""
        two destinations, ffmpeg's RTMP servers: the path to one goes dead 3 s in, and castline counts no more than that server \
        acknowledged and a window and a half beyond; the other starts late, and is published to once it is up; the run fails \
        for the end the first missed
        """)
    func deadPathAndLateServer() async throws {
        let scratch = try Scratch()
        let (dead, late) = (scratch.file("dead.flv"), scratch.file("late.flv"))
        let ports = try FreePort.find(3)
        let (deadPort, proxyPort, latePort) = (ports[0], ports[1], ports[2])
        func server(_ port: Int, _ file: String) throws -> ChildProcess {
            let server = ChildProcess(executable: "/usr/bin/ffmpeg", arguments: [
                "-nostdin", "-v", "error", "-listen", "1", "-i", "rtmp://127.0.0.1:\(port)/live/k", "-c", "copy", file,
            ])
            try server.start()
            return server
        }
        let first = try server(deadPort, dead)
        defer { Task { await first.terminate() } }
        // Waited on without connecting: each server takes one connection only.
        try #require(await PortProbe.waitUntilListening(port: deadPort, timeout: .seconds(10)))
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Support/stalling_proxy.py").path
        let proxy = ChildProcess(executable: ChildProcess.which("python3") ?? "/usr/bin/python3",
                                 arguments: [script, "\(proxyPort)", "\(deadPort)", "3"])
        try proxy.start()
        defer { Task { await proxy.terminate() } }
        try #require(await PortProbe.waitUntilListening(port: proxyPort, timeout: .seconds(10)))
        // 8 Mbit/s: the socket buffers a dead path hides fill in seconds, not in a minute.
        let run = try Castline.start([
            "broadcast", "rtmp://127.0.0.1:\(proxyPort)/live", "rtmp://127.0.0.1:\(latePort)/live", "--key-env", "K",
            "--size", "320x240", "--video-bitrate", "8M", "--duration", "10s",
        ], environment: ["K": "k"])
        // The second server starts once castline has found it missing.
        try #require(await Castline.waitFor("sinks[1].rtmp (rtmp://127.0.0.1:\(latePort)/live): not connected yet (", in: run, timeout: .seconds(20)),
                     "\(run.standardError)")
        let second = try server(latePort, late)
        defer { Task { await second.terminate() } }
        let status = await run.waitForExit(timeout: .seconds(40))
        await run.waitForOutput()
        _ = await first.waitForExit(timeout: .seconds(10))
        _ = await second.waitForExit(timeout: .seconds(10))
        let said = run.standardError
        #expect(status == 1 && said.contains("sinks[0].rtmp: the connection to rtmp://127.0.0.1:\(proxyPort)/live was lost ")
                && said.contains(" s before the end and was not back"), "\(said)")
        func published(_ marker: String) -> Double? {
            guard let line = said.split(separator: "\n").first(where: { $0.contains(marker) }),
                  let after = line.components(separatedBy: "published ").last else { return nil }
            return Double(after.prefix { $0 != " " })
        }
        let deadPublished = try #require(published("127.0.0.1:\(proxyPort)/live was lost"), "\(said)")
        let latePublished = try #require(published("to rtmp://127.0.0.1:\(latePort)/live"), "\(said)")
        let (deadStored, lateStored) = (try await ProbedMedia.probe(dead).duration, try await ProbedMedia.probe(late).duration)
        // The server acknowledges every 2.5 MB (2.5 s here), and is given half a window more to:
        // what it took is known to within a window and a half, 3.75 s at 8 Mbit/s, and a little
        // more where a busy machine encodes below it (all 10 s were claimed before).
        #expect(abs(deadStored - 3) < 0.5 && deadPublished >= deadStored - 0.5 && deadPublished <= deadStored + 4.5,
                "castline says it published \(deadPublished) s; the server stored \(deadStored) s: \(said)")
        #expect(lateStored > 3 && abs(latePublished - lateStored) < 1, "late: castline says \(latePublished) s; the server stored \(lateStored) s")
    }

    @Test("a server that takes the TCP connection and never answers: nothing published, exit 1, however the run ends")
    func silentServer() async throws {
        let silent = try SilentTCPListener()
        defer { silent.close() }
        let url = "rtmp://127.0.0.1:\(silent.port)/live"
        let timed = try await Castline.run(["broadcast", url, "--key-env", "K", "--size", "320x240", "--duration", "3s"],
                                           environment: ["K": Self.key], timeout: .seconds(30))
        #expect(timed.status == 1, "\(timed.stderr)")
        #expect(timed.stderr.contains("error: nothing was published: the server at \(url) did not accept the stream in"), "\(timed.stderr)")
        #expect(!timed.stderr.contains("rtmp: published"), "\(timed.stderr)")
        #expect(!timed.stderr.contains("  rtmp0:"), "a destination that sent nothing has no summary row: \(timed.stderr)")
        // A run too short for any server to answer is said to be that, not the server's fault.
        let short = try await Castline.run(["broadcast", url, "--key-env", "K", "--size", "320x240", "--duration", "300ms"],
                                           environment: ["K": Self.key], timeout: .seconds(30))
        #expect(short.status == 1 && short.stderr.contains("error: nothing was published: the run ended")
                && short.stderr.contains("(run longer; if it still does not, check the host and port)"), "\(short.stderr)")
        // Ctrl-C before anything answered is the same verdict; one as the run starts (a stop while
        // the graph was being built once let it play on past the end: exit 0 and a crash) too.
        let process = try Castline.start(["broadcast", url, "--key-env", "K", "--size", "320x240"],
                                         environment: Castline.strict.merging(["K": Self.key]) { $1 })
        try #require(await Castline.waitFor("connecting", in: process, timeout: .seconds(20)), "\(process.standardError)")
        let status = await Castline.interrupt(process)
        #expect(status == 1, "\(process.standardError)")
        #expect(process.standardError.contains("error: nothing was published"), "\(process.standardError)")
        // rtmps to it: the certificate check waits on a handshake that never comes, and Ctrl-C ends it at once.
        let secure = try Castline.start(["broadcast", "rtmps://127.0.0.1:\(silent.port)/live", "--key-env", "K", "--size", "320x240"],
                                        environment: Castline.strict.merging(["K": Self.key]) { $1 })
        try #require(await Castline.waitFor("connecting", in: secure, timeout: .seconds(20)), "\(secure.standardError)")
        let asked = ContinuousClock.now
        let secureStatus = await Castline.interrupt(secure)
        #expect(ContinuousClock.now - asked < .seconds(2), "Ctrl-C took \(ContinuousClock.now - asked)")
        #expect(secureStatus == 1 && secure.standardError.contains("error: nothing was published: the run ended before any media reached"),
                "\(secure.standardError)")
    }

    @Test("a short broadcast to nginx: published as long as connected, bytes sent and no 'acknowledged' before nginx acknowledged, no silences claimed, one count of reconnects")
    func shortBroadcast() async throws {
        try await withIngest { _, endpoints in
            let result = try await Castline.run([
                "broadcast", endpoints.rtmpURL, "--key-env", "K", "--size", "320x240", "--duration", "4s",
            ], environment: ["K": Self.key], timeout: .seconds(40))
            #expect(result.status == 0, "\(result.stderr)")
            let line = try #require(result.stderr.split(separator: "\n").first { $0.hasPrefix("rtmp: published ") }, "\(result.stderr)")
            let seconds = try #require(Double(line.dropFirst("rtmp: published ".count).prefix { $0 != " " }))
            #expect(seconds > 3 && seconds <= 4.05, "\(line)")
            // 4 s at 2.6 Mbit/s is about 1.3 MB: under nginx's 5 MB acknowledgement window.
            #expect(line.contains("reconnects: 0") && line.hasSuffix(" MB sent"), "\(line)")
            #expect(!result.stderr.contains("acknowledged"), "\(result.stderr)")
            // The broadcast's stats stage sees encoded audio: it measures no level, and claims no silences.
            #expect(!result.stderr.contains("silences"), "\(result.stderr)")
            #expect(result.stderr.contains("summary: ") && result.stderr.contains(", reconnects 0"), "\(result.stderr)")
            let sent = try #require(line.split(separator: " ").dropLast(2).last)
            #expect(result.stderr.contains("  rtmp0: \(sent) MB sent"), "the summary and the line agree: \(result.stderr)")
            #expect(endpoints.published(key: Self.key).segments.count >= 1)
        }
    }

    @Test("--ca-file with an rtmps:// and an rtmp:// destination applies to the rtmps one: both publish, exit 0")
    func caFileForTheSecureOne() async throws {
        try await withIngest { _, endpoints in
            let result = try await Castline.run([
                "broadcast", endpoints.rtmpsURL, endpoints.rtmpURL, "--key-env", "K1", "--key-env", "K2", "--ca-file", endpoints.caFile,
                "--size", "320x240", "--duration", "3s",
            ], environment: ["K1": Self.key + "-tls", "K2": Self.key + "-plain"], timeout: .seconds(40))
            #expect(result.status == 0, "\(result.stderr)")
            // Each named as the summary names it: the two lines are told apart.
            #expect(result.stderr.contains("rtmp0: published ") && result.stderr.contains("rtmp1: published "), "\(result.stderr)")
            #expect(!endpoints.published(key: Self.key + "-tls").segments.isEmpty && !endpoints.published(key: Self.key + "-plain").segments.isEmpty)
        }
    }

    @Test("an SRT listener that had a caller for about 3 s of 9: published counts the 3, not the 9; with none at all, exit 1")
    func srtListenerTime() async throws {
        let scratch = try Scratch()
        let port = try FreePort.find(datagram: true), lonelyPort = try FreePort.find(datagram: true)
        // The listener nobody calls, at the same time.
        async let alone = Castline.run([
            "broadcast", "srt://:\(lonelyPort)?mode=listener", "--size", "320x240", "--duration", "3s",
        ], timeout: .seconds(30))
        let broadcast = try Castline.start([
            "broadcast", "srt://:\(port)?mode=listener", "--size", "320x240", "--keyframe-interval", "1s", "--duration", "9s",
        ])
        defer { broadcast.signal(SIGKILL) }
        try #require(await Castline.waitFor("waiting for a caller", in: broadcast, timeout: .seconds(20)), "\(broadcast.standardError)")
        let calling = ContinuousClock.now
        let caller = try await ChildProcess.run("/usr/bin/ffmpeg", [
            "-nostdin", "-v", "error", "-y", "-i", "srt://127.0.0.1:\(port)", "-t", "3", "-c", "copy", "-f", "mpegts", scratch.file("called.ts"),
        ])
        #expect(caller.status == 0, "\(caller.stderr)")
        // As long as the caller ran (3 s of media, its start and its keyframe wait): no longer.
        let callerRan = (ContinuousClock.now - calling) / .seconds(1)
        let status = await broadcast.waitForExit(timeout: .seconds(30))
        await broadcast.waitForOutput()
        #expect(status == 0, "\(broadcast.standardError)")
        let line = try #require(broadcast.standardError.split(separator: "\n").first { $0.hasPrefix("srt: published ") },
                                "\(broadcast.standardError)")
        let seconds = try #require(Double(line.dropFirst("srt: published ".count).prefix { $0 != " " }))
        // (SRT says nothing of a caller leaving: a 500 ms reading notices it.)
        #expect(seconds >= 2 && seconds <= callerRan + 1, "\(line); the caller ran \(callerRan) s")
        // The caller acknowledged what it took: counted in the summary.
        #expect((SRTTests.acksReceived(broadcast.standardError) ?? 0) > 0, "\(broadcast.standardError)")

        let lonely = try await alone
        #expect(lonely.status == 1, "\(lonely.stderr)")
        #expect(lonely.stderr.contains("error: nothing was published: no SRT caller connected to srt://:"), "\(lonely.stderr)")
    }
}

/// A TCP port that completes the handshake (the kernel does, for its backlog) and never says a word.
final class SilentTCPListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProbeError(message: "socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else {
            Glibc.close(fd)
            throw ProbeError(message: "cannot listen on a loopback port")
        }
        descriptor = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() { Glibc.close(descriptor) }
}
