import Foundation
import Testing
@testable import GIONet
import LocalIngest
import TestSupport

/// Starts a real nginx-rtmp + stunnel ingest, runs `body`, always stops it.
private func withIngest(_ body: (IngestEndpoints) async throws -> Void) async throws {
    let server = IngestServer()
    do {
        let endpoints = try await server.start()
        try await body(endpoints)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// The line TLSRelay.check throws for 127.0.0.1:remotePort, or nil if it passes.
/// (A plain function: closures for this inside the async test closure crashed or miscompiled with Swift 6.3.1.)
private func checkLine(remotePort: Int, serverName: String? = nil, trust: TLSTrust, timeout: Duration = .seconds(10)) -> String? {
    do {
        try TLSRelay.check(remoteHost: "127.0.0.1", remotePort: remotePort, serverName: serverName, trust: trust, timeout: timeout)
        return nil
    } catch {
        return error.description
    }
}

/// Threads named by g_thread_try_new("castline-tls-relay") (comm is cut to 15 characters).
private func relayThreadCount() -> Int {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    return tasks.filter {
        (try? String(contentsOfFile: "/proc/self/task/\($0)/comm", encoding: .utf8))?.hasPrefix("castline-tls") == true
    }.count
}

/// Open sockets of this process (by /proc/self/fd inode) whose local or remote TCP port is in `ports`:
/// a leaked GSocket or GSocketConnection keeps its descriptor and shows up here.
private func openSockets(touching ports: Set<Int>) -> Int {
    let fdDirectory = "/proc/self/fd"
    let inodes = Set(((try? FileManager.default.contentsOfDirectory(atPath: fdDirectory)) ?? []).compactMap { fd -> String? in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: fdDirectory + "/" + fd),
              target.hasPrefix("socket:[") else { return nil }
        return String(target.dropFirst(8).dropLast())
    })
    var count = 0
    for table in ["/proc/self/net/tcp", "/proc/self/net/tcp6"] {
        // Not String(contentsOfFile:): on procfs it returns only the first 4096 bytes.
        guard let handle = FileHandle(forReadingAtPath: table) else { continue }
        let text = String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)
        try? handle.close()
        for line in text.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 9, inodes.contains(String(fields[9])) else { continue }
            let portsOfLine = [fields[1], fields[2]].compactMap { $0.split(separator: ":").last.flatMap { Int($0, radix: 16) } }
            if portsOfLine.contains(where: ports.contains) { count += 1 }
        }
    }
    return count
}

private func ffmpegPublish(_ url: String, seconds: Int = 4) -> [String] {
    ["-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
     "-f", "lavfi", "-i", "sine", "-t", "\(seconds)", "-c:v", "libx264", "-preset", "veryfast", "-g", "60",
     "-pix_fmt", "yuv420p", "-c:a", "aac", "-f", "flv", url]
}

/// What castline does: rtmp2sink publishing plain RTMP (to the relay).
private func gstPublish(_ url: String, buffers: Int? = 90, keyframeEvery: Int? = nil) -> [String] {
    ["-e", "videotestsrc", "is-live=true"] + (buffers.map { ["num-buffers=\($0)"] } ?? []) +
        ["!", "x264enc", "tune=zerolatency"] + (keyframeEvery.map { ["key-int-max=\($0)"] } ?? []) + ["!", "h264parse", "!", "flvmux", "streamable=true",
         "!", "rtmp2sink", "location=\(url)"]
}

private func waitForFile(_ path: String, timeout: Duration = .seconds(10)) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if FileManager.default.fileExists(atPath: path) { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return FileManager.default.fileExists(atPath: path)
}

@Suite("TLSRelay", .serialized)
struct TLSRelayTests {
    @Test func fingerprintParsing() throws {
        let upper = String(repeating: "AB", count: 32)
        let colon = TLSFingerprint.colonized(upper)
        #expect(colon.count == 95)
        #expect(TLSFingerprint.normalize(upper.lowercased()) == colon)
        #expect(TLSFingerprint.normalize(colon.lowercased()) == colon)
        #expect(TLSFingerprint.normalize("AB:CD") == nil)
        #expect(TLSFingerprint.normalize(String(repeating: "G", count: 64)) == nil)
        #expect(throws: GIONetError.self) { try CertificatePolicy(.fingerprint("nope")) }
        #expect(CertificateProblems.words(1 | 8)  // G_TLS_CERTIFICATE_UNKNOWN_CA | G_TLS_CERTIFICATE_EXPIRED
                == ["unknown CA", "expired"])
    }

    @Test func badArgumentsFailBeforeConnecting() throws {
        let missing = checkLine(remotePort: 1, trust: .caFile("/nonexistent/ca.pem"))
        #expect(missing?.contains("cannot use CA file /nonexistent/ca.pem") == true, "\(missing ?? "no error")")
        let badPin = checkLine(remotePort: 1, trust: .fingerprint("12:34"))
        #expect(badPin?.contains("invalid fingerprint") == true)
        let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: 1, trust: .fingerprint("xyz"))
        #expect(throws: GIONetError.self) { _ = try relay.start() }
        #expect(relay.localPort == nil)
    }

    @Test func checkAndFetchFingerprintAgainstRealIngest() async throws {
        try await withIngest { endpoints in
            let port = endpoints.rtmpsPort
            // The private CA: trusted with --ca-file, unknown to the system store.
            #expect(checkLine(remotePort: port, trust: .caFile(endpoints.caFile)) == nil)
            let system = checkLine(remotePort: port, trust: .system)
            #expect(system == "TLS certificate of 127.0.0.1:\(port) is not trusted: unknown CA (give its CA with --ca-file, or check the host)")

            // GnuTLS also trusts a leaf certificate given as the anchor itself.
            #expect(checkLine(remotePort: port, trust: .caFile(endpoints.certificateFile)) == nil)
            // A CA file without the ingest's CA: the system bundle, as a file.
            let bundle = "/etc/ssl/certs/ca-certificates.crt"
            if FileManager.default.fileExists(atPath: bundle) {
                let otherCA = checkLine(remotePort: port, trust: .caFile(bundle))
                #expect(otherCA == "TLS certificate of 127.0.0.1:\(port) is not trusted: unknown CA (check that --ca-file holds the CA that signed it, or check the host)")
            }

            // SNI / identity: localhost is in the certificate, another name is not.
            #expect(checkLine(remotePort: port, serverName: "localhost", trust: .caFile(endpoints.caFile)) == nil)
            let wrongName = checkLine(remotePort: port, serverName: "ingest.example.com", trust: .caFile(endpoints.caFile))
            #expect(wrongName?.contains("is not trusted: bad identity") == true, "\(wrongName ?? "no error")")
            #expect(wrongName?.contains("ingest.example.com") == true)

            // Pinning: exact, lowercase without colons, wrong.
            let pin = endpoints.certificateSHA256
            #expect(checkLine(remotePort: port, trust: .fingerprint(pin)) == nil)
            let loose = pin.replacingOccurrences(of: ":", with: "").lowercased()
            #expect(checkLine(remotePort: port, trust: .fingerprint(loose)) == nil)
            let wrong = TLSFingerprint.colonized(String(repeating: "12", count: 32))
            let mismatch = checkLine(remotePort: port, trust: .fingerprint(wrong))
            #expect(mismatch == "certificate fingerprint mismatch: server has \(pin), expected \(wrong) (check --fingerprint)")
            // A pin wins over the hostname (the name need not match when the certificate itself is pinned).
            #expect(checkLine(remotePort: port, serverName: "ingest.example.com", trust: .fingerprint(pin)) == nil)
            #expect(checkLine(remotePort: port, trust: .insecure) == nil)

            let fetched = try TLSRelay.fetchFingerprint(remoteHost: "127.0.0.1", remotePort: port)
            #expect(fetched == pin)

            // Plain RTMP port: no TLS answer, the handshake times out.
            let plain = checkLine(remotePort: endpoints.rtmpPort, trust: .system, timeout: .seconds(2))
            #expect(plain?.contains("TLS handshake with 127.0.0.1:\(endpoints.rtmpPort)") == true, "\(plain ?? "no error")")
        }
    }

    @Test func closedPortCannotConnect() throws {
        let port = try FreePort.find()
        let line = checkLine(remotePort: port, trust: .system)
        #expect(line == "cannot connect to 127.0.0.1:\(port): Connection refused (check the URL and that the server is up)")
        #expect(throws: GIONetError.self) { _ = try TLSRelay.fetchFingerprint(remoteHost: "127.0.0.1", remotePort: port) }
    }

    @Test func relayCarriesFFmpegAndRtmp2sinkConcurrently() async throws {
        try await withIngest { endpoints in
            let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: endpoints.rtmpsPort, trust: .caFile(endpoints.caFile))
            let failures = Shared<[String]>([])
            relay.onFailure { line in failures.update { $0.append(line) } }
            let localPort = try relay.start()
            defer { relay.stop() }
            #expect(relay.localPort == localPort)
            #expect(try relay.start() == localPort)
            let base = "rtmp://127.0.0.1:\(localPort)/live"

            async let ffmpeg = ChildProcess.run("/usr/bin/ffmpeg", ffmpegPublish(base + "/relaykey"), timeout: .seconds(30))
            async let gst = ChildProcess.run("/usr/bin/gst-launch-1.0", gstPublish(base + "/gstkey"), timeout: .seconds(30))
            let (ff, gl) = try await (ffmpeg, gst)
            #expect(ff.status == 0, "ffmpeg: \(ff.stderr)")
            #expect(gl.status == 0, "gst-launch: \(gl.stdout) \(gl.stderr)")
            #expect(await waitForFile(endpoints.hlsDirectory + "/relaykey.m3u8"))
            #expect(await waitForFile(endpoints.hlsDirectory + "/gstkey.m3u8"))

            // A reconnect (a new connection on the same relay) works too.
            let again = try await ChildProcess.run("/usr/bin/gst-launch-1.0", gstPublish(base + "/again", buffers: 60), timeout: .seconds(30))
            #expect(again.status == 0, "gst-launch: \(again.stdout) \(again.stderr)")
            #expect(await waitForFile(endpoints.hlsDirectory + "/again.m3u8"))
            #expect(failures.value.isEmpty)

            // The relayed connections read data, so the server's TLS 1.3 session tickets arrived. A connection
            // under another trust must still verify the certificate (no resumption of those sessions).
            let system = checkLine(remotePort: endpoints.rtmpsPort, trust: .system)
            #expect(system?.contains("unknown CA") == true, "\(system ?? "check(.system) passed")")
            relay.stop()
            #expect(openSockets(touching: [localPort, endpoints.rtmpsPort]) == 0)
        }
    }

    @Test func relayWithSystemTrustRefusesAndReports() async throws {
        try await withIngest { endpoints in
            let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: endpoints.rtmpsPort, trust: .system)
            let failures = Shared<[String]>([])
            relay.onFailure { line in failures.update { $0.append(line) } }
            let localPort = try relay.start()
            defer { relay.stop() }
            let result = try await ChildProcess.run("/usr/bin/gst-launch-1.0",
                                                    gstPublish("rtmp://127.0.0.1:\(localPort)/live/refused"), timeout: .seconds(30))
            #expect(result.status == 1)
            #expect(await waitUntil { !failures.value.isEmpty })
            #expect(failures.value.first ==
                    "TLS certificate of 127.0.0.1:\(endpoints.rtmpsPort) is not trusted: unknown CA (give its CA with --ca-file, or check the host)")
            #expect(!FileManager.default.fileExists(atPath: endpoints.hlsDirectory + "/refused.m3u8"))
        }
    }

    @Test func relayToClosedPortReportsCannotConnect() async throws {
        let closed = try FreePort.find()
        let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: closed, trust: .system)
        let failures = Shared<[String]>([])
        relay.onFailure { line in failures.update { $0.append(line) } }
        let localPort = try relay.start()
        defer { relay.stop() }
        let result = try await ChildProcess.run("/usr/bin/gst-launch-1.0",
                                                gstPublish("rtmp://127.0.0.1:\(localPort)/live/x", buffers: 30), timeout: .seconds(30))
        #expect(result.status == 1)
        #expect(await waitUntil { !failures.value.isEmpty })
        #expect(failures.value.first?.hasPrefix("cannot connect to 127.0.0.1:\(closed): Connection refused") == true)
    }

    @Test func stopEndsThreadClosesPortAndLiveConnections() async throws {
        try await withIngest { endpoints in
            let before = relayThreadCount()
            let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: endpoints.rtmpsPort, trust: .fingerprint(endpoints.certificateSHA256))
            let localPort = try relay.start()
            #expect(await waitUntil { relayThreadCount() == before + 1 })  // the thread names itself once running
            #expect(PortProbe.isOpen(host: "127.0.0.1", port: localPort))

            // An endless live publish through the relay...
            let publisher = ChildProcess(executable: "/usr/bin/gst-launch-1.0",
                                         arguments: gstPublish("rtmp://127.0.0.1:\(localPort)/live/endless", buffers: nil, keyframeEvery: 30))
            try publisher.start()
            #expect(await waitForFile(endpoints.hlsDirectory + "/endless.m3u8", timeout: .seconds(15)))
            #expect(publisher.isRunning)
            // The listener, the connection from rtmp2sink and the one to the server.
            #expect(openSockets(touching: [localPort, endpoints.rtmpsPort]) == 3)

            // ...is cut by stop(): gst-launch errors out on its own.
            relay.stop()
            #expect(relay.localPort == nil)
            #expect(relayThreadCount() == before)
            #expect(!PortProbe.isOpen(host: "127.0.0.1", port: localPort))
            #expect(openSockets(touching: [localPort, endpoints.rtmpsPort]) == 0)
            let status = await publisher.waitForExit(timeout: .seconds(15))
            if status == nil { await publisher.terminate(grace: .seconds(1)) }
            #expect(status == 1, "gst-launch still running or succeeded after stop()")
            relay.stop()  // idempotent
        }
    }

    @Test func deinitStopsTheRelay() throws {
        let before = relayThreadCount()
        var port = 0
        do {
            let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: 443, trust: .system)
            port = try relay.start()
            #expect(waitUntil { relayThreadCount() == before + 1 })  // the thread names itself once running
        }
        #expect(relayThreadCount() == before)
        #expect(!PortProbe.isOpen(host: "127.0.0.1", port: port))
    }
}

extension TLSRelayTests {
    @Test func stopFromTheFailureHandler() throws {
        let before = relayThreadCount()
        let closed = try FreePort.find()
        let relay = TLSRelay(remoteHost: "127.0.0.1", remotePort: closed, trust: .insecure)
        let lines = Shared<[String]>([])
        relay.onFailure { [weak relay] line in
            lines.update { $0.append(line) }
            relay?.stop()  // on the relay thread: must not deadlock
        }
        let port = try relay.start()
        #expect(PortProbe.isOpen(host: "127.0.0.1", port: port))  // connects: the relay tries the closed port
        #expect(waitUntil { relay.localPort == nil })
        #expect(waitUntil { relayThreadCount() == before })
        #expect(!PortProbe.isOpen(host: "127.0.0.1", port: port))
        #expect(lines.value.count == 1)
        #expect(lines.value.first?.hasPrefix("cannot connect to 127.0.0.1:\(closed)") == true)
    }
}
