import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import LocalIngest

/// True if a process with this pid exists (zombies count as gone: they are not running).
func processIsAlive(_ pid: Int32) -> Bool {
    guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8) else { return false }
    // Field 3 (after "comm)") is the state; Z = zombie.
    guard let close = stat.lastIndex(of: ")") else { return true }
    return !stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).hasPrefix("Z")
}

@Suite("ChildProcess and socket helpers")
struct ChildProcessTests {
    @Test func runCapturesOutputAndExitStatus() async throws {
        let result = try await ChildProcess.run("/bin/sh", ["-c", "echo out; echo err >&2; exit 3"])
        #expect(result.status == 3)
        #expect(result.stdout == "out\n")
        #expect(result.stderr == "err\n")
        let ok = try await ChildProcess.run("true", [])
        #expect(ok.status == 0)
    }

    @Test func runTimesOutAndKills() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        await #expect(throws: ChildProcessError.self) {
            _ = try await ChildProcess.run("sleep", ["30"], timeout: .milliseconds(300))
        }
        #expect(clock.now - start < .seconds(5))
    }

    @Test func terminateKillsSleep() async throws {
        let process = ChildProcess(executable: "sleep", arguments: ["30"])
        try process.start()
        let pid = process.pid
        #expect(pid > 0)
        #expect(process.isRunning)
        #expect(processIsAlive(pid))
        #expect(await process.waitForExit(timeout: .milliseconds(200)) == nil)
        let status = await process.terminate(grace: .seconds(2))
        #expect(status == 128 + SIGTERM)
        #expect(!process.isRunning)
        #expect(!processIsAlive(pid))
    }

    @Test func terminateEscalatesToSIGKILL() async throws {
        // A shell that ignores SIGTERM must still die.
        let process = ChildProcess(executable: "/bin/sh", arguments: ["-c", "trap '' TERM; echo ready; while :; do sleep 0.1; done"])
        try process.start()
        defer { process.signal(SIGKILL) }
        for _ in 0..<100 where !process.standardOutput.contains("ready") { try await Task.sleep(for: .milliseconds(20)) }
        let status = await process.terminate(grace: .milliseconds(300))
        #expect(status == 128 + SIGKILL)
    }

    @Test func outputToFilesAndEnvironment() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("castline-cp-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let process = ChildProcess(executable: "/bin/sh", arguments: ["-c", "echo $CASTLINE_X; pwd; echo e >&2"],
                                   environment: ["CASTLINE_X": "hello", "PATH": "/usr/bin:/bin"],
                                   workingDirectory: dir, stdoutPath: dir + "/out.txt", stderrPath: dir + "/err.txt")
        try process.start()
        #expect(await process.waitForExit(timeout: .seconds(5)) == 0)
        let out = try String(contentsOfFile: dir + "/out.txt", encoding: .utf8)
        #expect(out.contains("hello"))
        #expect(out.contains(dir))
        #expect(try String(contentsOfFile: dir + "/err.txt", encoding: .utf8) == "e\n")
    }

    @Test func missingProgramAndWhich() async throws {
        #expect(ChildProcess.which("sh") != nil)
        #expect(ChildProcess.which("nginx") != nil)
        #expect(ChildProcess.which("castline-no-such-program") == nil)
        #expect(throws: ChildProcessError.self) {
            try ChildProcess(executable: "castline-no-such-program", arguments: []).start()
        }
    }

    @Test func freePortAndProbe() async throws {
        let port = try FreePort.find()
        #expect(port > 0)
        #expect(FreePort.isFree(port: port))
        #expect(!PortProbe.isOpen(host: "127.0.0.1", port: port))
        #expect(await PortProbe.waitUntilOpen(host: "127.0.0.1", port: port, timeout: .milliseconds(200)) == false)
    }

    @Test("a UDP port bound on any address is seen as taken, without binding it to look; closed, it is free again")
    func boundDatagramPortIsSeen() async throws {
        let port = try FreePort.find(datagram: true)
        #expect(!FreePort.isBound(datagram: port))
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        try #require(fd >= 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(bound == 0)
        #expect(await FreePort.waitUntilTaken(datagram: port, timeout: .seconds(1)))
        close(fd)
        #expect(!FreePort.isBound(datagram: port))
    }

    @Test func parsesStatXML() {
        let xml = """
        <rtmp><server><application><name>live</name><live>
        <stream><name>one</name><client><id>4</id><publishing/><active/></client><publishing/><active/></stream>
        <stream><name>idle</name><client><id>5</id></client></stream>
        <stream><name>a&amp;b</name><publishing/></stream>
        <nclients>1</nclients></live></application></server></rtmp>
        """
        #expect(IngestServer.parsePublishers(statXML: xml) == ["one", "a&b"])
        #expect(IngestServer.parsePublishers(statXML: "<rtmp></rtmp>") == [])
    }
}
