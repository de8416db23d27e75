import Foundation
import HTTPClient
import Testing
#if canImport(Glibc)
import Glibc
#endif
@testable import LocalIngest

/// Starts an ingest, runs `body`, and stops it whatever happens.
func withIngest(_ options: IngestOptions = .init(),
                _ body: (IngestServer, IngestEndpoints) async throws -> Void) async throws {
    let server = IngestServer(options: options)
    do {
        let endpoints = try await server.start()
        try await body(server, endpoints)
    } catch {
        await server.stop()
        throw error
    }
    await server.stop()
}

/// ffmpeg publishing a test pattern + tone for `seconds` in real time.
func startPublisher(_ url: String, seconds: Int, extra: [String] = []) throws -> ChildProcess {
    let args = ["-hide_banner", "-nostdin", "-loglevel", "error", "-re",
                "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30",
                "-f", "lavfi", "-i", "sine=frequency=1000",
                "-t", String(seconds),
                "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-pix_fmt", "yuv420p",
                "-c:a", "aac", "-f", "flv"] + extra + [url]
    let process = ChildProcess(executable: "ffmpeg", arguments: args)
    try process.start()
    return process
}

/// Runs `body` with a started publisher and terminates it afterwards, also on failure.
func withPublisher(_ url: String, seconds: Int, extra: [String] = [],
                   _ body: (ChildProcess) async throws -> Void) async throws {
    let publisher = try startPublisher(url, seconds: seconds, extra: extra)
    do {
        try await body(publisher)
    } catch {
        await publisher.terminate(grace: .seconds(1))
        throw error
    }
    await publisher.terminate(grace: .seconds(1))
}

/// ffprobe's codec names for the streams of `url`.
func probeCodecs(_ url: String) async throws -> [String] {
    let result = try await ChildProcess.run("ffprobe", ["-v", "error", "-show_entries", "stream=codec_name",
                                                        "-of", "csv=p=0", url], timeout: .seconds(20))
    #expect(result.status == 0, "ffprobe: \(result.stderr)")
    return result.stdout.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
}

func expectPlaylist(_ endpoints: IngestEndpoints, key: String) async throws {
    let response = try await HTTPFetcher.shared.fetch("GET", #require(URL(string: endpoints.hlsPlaylistURL(key: key))))
    #expect(response.status == 200)
    #expect(response.headers["content-type"] == "application/vnd.apple.mpegurl")
    #expect(response.text.hasPrefix("#EXTM3U"))
    #expect(response.text.contains("\(key)-0.ts"))
    let codecs = try await probeCodecs(endpoints.hlsPlaylistURL(key: key))
    #expect(codecs.contains("h264"), "codecs: \(codecs)")
    #expect(codecs.contains("aac"), "codecs: \(codecs)")
}

@Suite("IngestServer (real nginx-rtmp + stunnel)", .serialized)
struct IngestServerTests {
    @Test func rtmpPublishIsServedAsHLS() async throws {
        try await withIngest { server, endpoints in
            #expect(await server.isRunning)
            for port in [endpoints.rtmpPort, endpoints.rtmpsPort, endpoints.httpPort] {
                #expect(PortProbe.isOpen(host: "127.0.0.1", port: port))
            }
            #expect(endpoints.rtmpURL == "rtmp://127.0.0.1:\(endpoints.rtmpPort)/live")
            #expect(endpoints.hlsURLPattern == "http://127.0.0.1:\(endpoints.httpPort)/hls/<key>.m3u8")
            #expect(try await server.activePublishers() == [])

            try await withPublisher(endpoints.rtmpURL + "/testkey", seconds: 6) { ffmpeg in
                var seen: [String] = []
                for _ in 0..<60 {
                    seen = try await server.activePublishers()
                    if seen.contains("testkey") { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(seen == ["testkey"])
                let status = await ffmpeg.waitForExit(timeout: .seconds(20))
                #expect(status == 0, "ffmpeg: \(ffmpeg.standardError)")
            }
            try await expectPlaylist(endpoints, key: "testkey")
            #expect(FileManager.default.fileExists(atPath: endpoints.hlsDirectory + "/testkey.m3u8"))
            let log = try String(contentsOfFile: endpoints.accessLogPath, encoding: .utf8)
            #expect(log.split(separator: "\n").filter { $0.contains("PUBLISH \"live\" \"testkey\"") }.count == 1)
            #expect(try await server.activePublishers() == [])
        }
    }

    @Test func rtmpsThroughStunnelWithVerifiedChain() async throws {
        try await withIngest { server, endpoints in
            // The chain and the IP SAN verify with OpenSSL...
            let verify = try await ChildProcess.run("openssl", ["verify", "-CAfile", endpoints.caFile, endpoints.certificateFile])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
            let sClient = try await ChildProcess.run("/bin/sh", ["-c",
                "echo | openssl s_client -connect 127.0.0.1:\(endpoints.rtmpsPort) -CAfile '\(endpoints.caFile)' -verify_return_error -verify_ip 127.0.0.1"],
                timeout: .seconds(10))
            #expect(sClient.status == 0, "\(sClient.stderr)")
            #expect(sClient.stdout.contains("Verify return code: 0 (ok)"))
            let fingerprint = try await ChildProcess.run("openssl", ["x509", "-in", endpoints.certificateFile, "-noout", "-fingerprint", "-sha256"])
            #expect(fingerprint.stdout.uppercased().contains(endpoints.certificateSHA256))
            #expect(endpoints.certificateSHA256.split(separator: ":").count == 32)

            // ...and with GnuTLS (ffmpeg's TLS here) verifying against the CA.
            try await withPublisher(endpoints.rtmpsURL + "/tlskey", seconds: 4,
                                    extra: ["-tls_verify", "1", "-ca_file", endpoints.caFile]) { ffmpeg in
                let status = await ffmpeg.waitForExit(timeout: .seconds(20))
                #expect(status == 0, "ffmpeg: \(ffmpeg.standardError)")
            }
            try await expectPlaylist(endpoints, key: "tlskey")
        }
    }

    @Test func rtmpsRefusesUnknownCA() async throws {
        try await withIngest { _, endpoints in
            // Without our CA (an empty CA folder: OpenSSL takes it, where /dev/null as a CA file fails
            // before connecting), a verifying client must fail on the certificate: verification is real.
            let noCAs = FileManager.default.temporaryDirectory.appendingPathComponent("castline-no-ca-\(getpid())").path
            try FileManager.default.createDirectory(atPath: noCAs, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: noCAs) }
            let result = try await ChildProcess.run("/bin/sh", ["-c",
                "echo | openssl s_client -connect 127.0.0.1:\(endpoints.rtmpsPort) -CApath '\(noCAs)' -no-CAfile -no-CAstore -verify_return_error"],
                timeout: .seconds(10))
            #expect(result.status == 1)
            #expect(result.stderr.contains("certificate verify failed") && result.stdout.contains("unable to get local issuer certificate"),
                    "\(result.stdout)\n\(result.stderr)")
        }
    }

    @Test func allowedKeysRefuseOthers() async throws {
        try await withIngest(IngestOptions(allowedKeys: ["good"])) { server, endpoints in
            try await withPublisher(endpoints.rtmpURL + "/bad", seconds: 5) { ffmpeg in
                let status = await ffmpeg.waitForExit(timeout: .seconds(4))
                #expect(status != nil && status != 0, "bad key was not refused")
            }
            try await withPublisher(endpoints.rtmpURL + "/good", seconds: 3) { ffmpeg in
                var seen: [String] = []
                for _ in 0..<40 {
                    seen = try await server.activePublishers()
                    if !seen.isEmpty { break }
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(seen == ["good"])
                let status = await ffmpeg.waitForExit(timeout: .seconds(20))
                #expect(status == 0, "ffmpeg: \(ffmpeg.standardError)")
            }
            let response = try await HTTPFetcher.shared.fetch("GET", #require(URL(string: endpoints.hlsPlaylistURL(key: "good"))))
            #expect(response.status == 200)
            #expect(!FileManager.default.fileExists(atPath: endpoints.hlsDirectory + "/bad.m3u8"))
            // The keys are the owner's to read: the configuration lists them, the logs name those tried.
            let root = URL(fileURLWithPath: endpoints.hlsDirectory).deletingLastPathComponent().path
            let attributes = { (path: String) in (try? FileManager.default.attributesOfItem(atPath: path))?[.posixPermissions] as? Int }
            #expect(attributes(root + "/nginx.conf") == 0o600 && attributes(root + "/logs") == 0o700 && attributes(root + "/hls") == 0o700)
            let httpLog = (try? String(contentsOfFile: root + "/logs/http-access.log", encoding: .utf8)) ?? ""
            #expect(!httpLog.contains("name=bad") && !httpLog.contains("name=good"), "\(httpLog)")
        }
    }

    @Test func invalidKeyIsRejected() async throws {
        let server = IngestServer(options: IngestOptions(allowedKeys: ["ok", "no spaces"]))
        await #expect(throws: IngestError.self) { _ = try await server.start() }
        await server.stop()
    }

    @Test func stopAndRestartNginx() async throws {
        try await withIngest { server, endpoints in
            let oldPID = try #require(await server.nginxPID)
            await server.stopNginx()
            #expect(!processIsAlive(oldPID))
            #expect(!PortProbe.isOpen(host: "127.0.0.1", port: endpoints.rtmpPort))
            #expect(!PortProbe.isOpen(host: "127.0.0.1", port: endpoints.httpPort))
            #expect(PortProbe.isOpen(host: "127.0.0.1", port: endpoints.rtmpsPort))  // stunnel stays
            #expect(await !server.isRunning)
            try await server.startNginx()
            #expect(PortProbe.isOpen(host: "127.0.0.1", port: endpoints.rtmpPort))
            #expect(try await HTTPFetcher.shared.fetch("GET", #require(URL(string: endpoints.statURL))).status == 200)
            #expect(await server.isRunning)
            #expect(await server.nginxPID != oldPID)
        }
    }

    @Test func fixedPortInUseIsReported() async throws {
        try await withIngest { _, endpoints in
            let second = IngestServer(options: IngestOptions(rtmpPort: endpoints.rtmpPort))
            do {
                _ = try await second.start()
                Issue.record("second server started on a used port")
            } catch IngestError.portInUse(let port) {
                #expect(port == endpoints.rtmpPort)
            }
            await second.stop()
        }
    }

    @Test func stopLeavesNothingBehind() async throws {
        let server = IngestServer()
        let endpoints = try await server.start()
        let pids = await server.processIDs
        #expect(pids.count == 2)
        let publisher = try startPublisher(endpoints.rtmpURL + "/gone", seconds: 30)
        do {
            for _ in 0..<50 where try await server.activePublishers().isEmpty {
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(try await server.activePublishers() == ["gone"])
        } catch {
            await publisher.terminate()
            await server.stop()
            throw error
        }
        await server.stop()
        await server.stop()  // idempotent
        // ffmpeg loses its connection and exits on its own.
        let status = await publisher.waitForExit(timeout: .seconds(10))
        if status == nil { await publisher.terminate() }
        #expect(status != nil)
        for pid in pids + [publisher.pid] { #expect(!processIsAlive(pid), "pid \(pid) still alive") }
        #expect(!FileManager.default.fileExists(atPath: endpoints.workDirectory))
        #expect(await !server.isRunning)
        #expect(await server.processIDs.isEmpty)
        #expect(!PortProbe.isOpen(host: "127.0.0.1", port: endpoints.rtmpsPort))
    }

    @Test func givenWorkDirectoryIsKept() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("castline-ingest-kept-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try await withIngest(IngestOptions(workDirectory: dir)) { _, endpoints in
            #expect(endpoints.workDirectory == dir)
            #expect(endpoints.caFile.hasPrefix(dir))
            let conf = try String(contentsOfFile: dir + "/nginx.conf", encoding: .utf8)
            #expect(conf.contains("hls_path \(dir)/hls;"))
            #expect(conf.contains("master_process off;"))
        }
        #expect(FileManager.default.fileExists(atPath: dir + "/nginx.conf"))
    }

    @Test("started again in its kept folder, the ingest is the same server: same ports, CA and certificate")
    func keptFolderRestartsTheSameServer() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("castline-ingest-again-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var first: IngestEndpoints?
        var ca = ""
        try await withIngest(IngestOptions(workDirectory: dir)) { _, endpoints in
            first = endpoints
            ca = try String(contentsOfFile: endpoints.caFile, encoding: .utf8)
        }
        try await withIngest(IngestOptions(workDirectory: dir)) { _, endpoints in
            #expect(endpoints.rtmpPort == first?.rtmpPort && endpoints.rtmpsPort == first?.rtmpsPort
                    && endpoints.httpPort == first?.httpPort)
            #expect(endpoints.certificateSHA256 == first?.certificateSHA256)
            let again = try String(contentsOfFile: endpoints.caFile, encoding: .utf8)
            #expect(again == ca)
        }
        // Another host needs other certificates: made again.
        try await withIngest(IngestOptions(host: "localhost", workDirectory: dir)) { _, endpoints in
            #expect(endpoints.certificateSHA256 != first?.certificateSHA256)
        }
    }
}

@Suite("IngestServer start failures")
struct IngestServerFailureTests {
    @Test func nginxFailureCarriesLogTail() async throws {
        let server = IngestServer(options: IngestOptions(rtmpModulePath: "/etc/hostname"))
        do {
            _ = try await server.start()
            Issue.record("nginx started with a bogus module")
        } catch IngestError.startFailed(let program, let log) {
            #expect(program == "nginx")
            #expect(log.contains("/etc/hostname"), "log: \(log)")
        }
        #expect(await server.processIDs.isEmpty)
        #expect(await server.currentEndpoints == nil)
        await server.stop()
    }

    @Test func unavailableHostIsReported() async throws {
        let server = IngestServer(options: IngestOptions(host: "192.0.2.1"))  // TEST-NET-1, not ours
        await #expect(throws: IngestError.self) { _ = try await server.start() }
        await server.stop()
    }

    @Test func concurrentStartsShareOneIngest() async throws {
        let server = IngestServer()
        async let a = server.start()
        async let b = server.start()
        do {
            let (ea, eb) = try await (a, b)
            #expect(ea == eb)
            #expect(await server.processIDs.count == 2)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
