import Foundation
import HTTPClient
#if canImport(Glibc)
import Glibc
#endif

/// A real local ingest on loopback: nginx + nginx-rtmp (RTMP in, HLS out over HTTP, rtmp_stat)
/// and stunnel in front of it for RTMPS with a generated CA + server certificate.
///
/// Children are spawned with a parent-death signal (see `ChildProcess`), so a killed castline
/// process does not leave nginx/stunnel behind; `stop()` is still the normal way out (a killed
/// process leaves its temp work directory behind).
///
/// Facts this relies on (nginx 1.22 + libnginx-mod-rtmp 1.1.4, stunnel 5.68, Debian 12):
/// - `master_process off; daemon off;` runs nginx as one foreground process as the invoking user;
///   nginx-rtmp HLS, rtmp_stat and on_publish all work that way. `-e` sends the start-up error log
///   into the work dir (the compiled-in default is stderr / /var/log/nginx), and the *_temp_path
///   directives keep nginx away from /var/lib/nginx. As root, `user root root;` is written because
///   nginx would otherwise chown its paths (the hls dir) to nobody.
/// - `hls_path WORK/hls` → WORK/hls/KEY.m3u8 + KEY-N.ts, served as /hls/KEY.m3u8 by `root WORK`.
///   Files stay after the publisher leaves (the playlist then has no #EXT-X-ENDLIST).
/// - on_publish sends a POST with the arguments in the body by default; `notify_method get` puts
///   them in the query string, which the `map $arg_name` needs.
/// - A refused publish still writes a PUBLISH line to the rtmp access log; a bare TCP probe does not.
public actor IngestServer {
    public let options: IngestOptions

    private var programs: IngestPrograms?
    private var layout: IngestLayout?
    private var createdWorkDirectory = false
    /// The ports to bind (nil: a free one): the given ones, else in a kept work directory the last start's.
    private var fixedPorts: (rtmp: Int?, rtmps: Int?, http: Int?) = (nil, nil, nil)
    private var endpoints: IngestEndpoints?
    private var nginx: ChildProcess?
    private var stunnel: ChildProcess?
    private var startTask: Task<IngestEndpoints, any Error>?

    /// How long `start()`/`startNginx()` wait for the ports.
    public static let startTimeout: Duration = .seconds(10)

    public init(options: IngestOptions = .init()) {
        self.options = options
    }

    /// The endpoints of a started ingest (nil before `start()` and after `stop()`).
    public var currentEndpoints: IngestEndpoints? { endpoints }

    /// nginx and stunnel both running.
    public var isRunning: Bool {
        (nginx?.isRunning ?? false) && (stunnel?.isRunning ?? false)
    }

    /// Pids of the nginx and stunnel processes that are running now.
    public var processIDs: [Int32] {
        [nginx, stunnel].compactMap { $0 }.filter { $0.isRunning }.map { $0.pid }
    }

    public var nginxPID: Int32? { nginx.flatMap { $0.isRunning ? $0.pid : nil } }
    public var stunnelPID: Int32? { stunnel.flatMap { $0.isRunning ? $0.pid : nil } }

    /// Generates certificates, writes configs, starts nginx then stunnel and waits until every
    /// port accepts TCP (10 s). Calling it again while started returns the same endpoints.
    public func start() async throws -> IngestEndpoints {
        if let startTask { return try await startTask.value }
        if let endpoints { return endpoints }
        let task = Task { try await self.performStart() }
        startTask = task
        defer { startTask = nil }
        return try await task.value
    }

    private func performStart() async throws -> IngestEndpoints {
        let programs = try IngestPrograms.locate(rtmpModulePath: options.rtmpModulePath)
        for key in options.allowedKeys ?? [] { try IngestConfig.validate(key: key) }
        self.programs = programs

        let root: String
        if let dir = options.workDirectory {
            root = (dir as NSString).standardizingPath
            createdWorkDirectory = false
        } else {
            root = try Self.makeTempDirectory()
            createdWorkDirectory = true
        }
        let layout = IngestLayout(root: root)
        self.layout = layout
        let saved = createdWorkDirectory ? nil : layout.savedPorts()
        fixedPorts = (options.rtmpPort ?? saved?.rtmp, options.rtmpsPort ?? saved?.rtmps, options.httpPort ?? saved?.http)
        do {
            try layout.createDirectories()
            let fingerprint = try await Certificates.prepare(layout: layout, openssl: programs.openssl, host: options.host)
            // Auto-chosen ports can be taken by someone else between the probe and nginx's bind;
            // then pick new ones and try again.
            var attempt = 0
            while true {
                attempt += 1
                let ports = try resolvePorts()
                let endpoints = IngestEndpoints(host: options.host, rtmpPort: ports.rtmp, rtmpsPort: ports.rtmps,
                                                httpPort: ports.http, caFile: layout.caCert, certificateFile: layout.serverCert,
                                                certificateSHA256: fingerprint, workDirectory: root)
                try writeConfigs(layout: layout, programs: programs, endpoints: endpoints)
                self.endpoints = endpoints
                do {
                    try await launchNginx()
                    try await launchStunnel()
                    layout.savePorts(ports)
                    return endpoints
                } catch IngestError.portInUse(let port) where attempt < 3 && isAutoPort(port, endpoints) {
                    await stunnel?.terminate(grace: .seconds(1)); stunnel = nil
                    await nginx?.terminate(grace: .seconds(1)); nginx = nil
                    continue
                }
            }
        } catch {
            await teardown()
            throw error
        }
    }

    /// SIGTERM, ≤3 s, SIGKILL for stunnel and nginx; removes the work directory if we created it.
    /// Idempotent. A `start()` in progress is awaited first.
    public func stop() async {
        if let startTask { _ = try? await startTask.value }
        await teardown()
    }

    deinit {
        // Dropped without stop(): kill now (the ChildProcess deinit reaps) and clean up.
        nginx?.signal(SIGKILL)
        stunnel?.signal(SIGKILL)
        if createdWorkDirectory, let layout { try? FileManager.default.removeItem(atPath: layout.root) }
    }

    private func teardown() async {
        if let stunnel { await stunnel.terminate(grace: .seconds(3)) }
        stunnel = nil
        if let nginx { await nginx.terminate(grace: .seconds(3)) }
        nginx = nil
        if createdWorkDirectory, let layout {
            try? FileManager.default.removeItem(atPath: layout.root)
        }
        createdWorkDirectory = false
        layout = nil
        endpoints = nil
    }

    /// Stops nginx only (stunnel keeps its port; RTMPS connections are then accepted and closed).
    /// The RTMP and HTTP ports are free until `startNginx()`; nothing can reserve them meanwhile.
    public func stopNginx() async {
        if let nginx { await nginx.terminate(grace: .seconds(3)) }
        nginx = nil
    }

    /// Starts nginx again with the same ports and configuration (HLS files already written stay).
    public func startNginx() async throws {
        guard endpoints != nil else { throw IngestError.notStarted }
        if nginx?.isRunning == true { return }
        try await launchNginx()
    }

    /// Stream names publishing now, from the rtmp_stat XML.
    public func activePublishers() async throws -> [String] {
        guard let endpoints else { throw IngestError.notStarted }
        let response: HTTPResponse
        do {
            guard let url = URL(string: endpoints.statURL) else { throw IngestError.statUnavailable("bad URL \(endpoints.statURL)") }
            response = try await HTTPFetcher.shared.fetch("GET", url)
        } catch {
            throw IngestError.statUnavailable("\(error)")
        }
        guard response.status == 200 else { throw IngestError.statUnavailable("HTTP \(response.status)") }
        return Self.parsePublishers(statXML: response.text)
    }

    /// Names of `<stream>` elements that contain `<publishing/>` in nginx-rtmp's stat XML.
    public static func parsePublishers(statXML xml: String) -> [String] {
        var names: [String] = []
        var rest = xml[...]
        while let open = rest.range(of: "<stream>") {
            guard let close = rest.range(of: "</stream>", range: open.upperBound..<rest.endIndex) else { break }
            let block = rest[open.upperBound..<close.lowerBound]
            if block.contains("<publishing/>"),
               let n1 = block.range(of: "<name>"),
               let n2 = block.range(of: "</name>", range: n1.upperBound..<block.endIndex) {
                let name = String(block[n1.upperBound..<n2.lowerBound])
                    .replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
                    .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#39;", with: "'")
                    .replacingOccurrences(of: "&amp;", with: "&")
                names.append(name)
            }
            rest = rest[close.upperBound...]
        }
        return names
    }

    // MARK: - Internals

    private static func makeTempDirectory() throws -> String {
        let base = (NSTemporaryDirectory() as NSString).appendingPathComponent("castline-ingest-XXXXXX")
        var template = Array(base.utf8CString)
        guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw IngestError.workDirectory(path: base, message: String(cString: strerror(errno)))
        }
        return String(cString: result)
    }

    private func isAutoPort(_ port: Int, _ endpoints: IngestEndpoints) -> Bool {
        (fixedPorts.rtmp == nil && port == endpoints.rtmpPort) || (fixedPorts.rtmps == nil && port == endpoints.rtmpsPort)
            || (fixedPorts.http == nil && port == endpoints.httpPort)
    }

    private func resolvePorts() throws -> (rtmp: Int, rtmps: Int, http: Int) {
        var used: Set<Int> = []
        func pick(_ fixed: Int?) throws -> Int {
            if let fixed {
                guard FreePort.isFree(host: options.host, port: fixed) else { throw IngestError.portInUse(fixed) }
                used.insert(fixed)
                return fixed
            }
            for _ in 0..<20 {
                let port: Int
                do {
                    port = try FreePort.find(host: options.host)
                } catch {
                    throw IngestError.addressUnavailable(host: options.host, message: "\(error)")
                }
                if used.insert(port).inserted { return port }
            }
            throw IngestError.startFailed(program: "castline", log: "no free port found on \(options.host)")
        }
        // Fixed ports first so auto-picked ones never collide with them.
        for fixed in [fixedPorts.rtmp, fixedPorts.rtmps, fixedPorts.http].compactMap({ $0 }) {
            guard used.insert(fixed).inserted else { throw IngestError.portInUse(fixed) }
        }
        used.removeAll()
        let rtmp = try pick(fixedPorts.rtmp)
        let rtmps = try pick(fixedPorts.rtmps)
        let http = try pick(fixedPorts.http)
        return (rtmp, rtmps, http)
    }

    private func writeConfigs(layout: IngestLayout, programs: IngestPrograms, endpoints: IngestEndpoints) throws {
        let nginxConf = IngestConfig.nginx(layout: layout, programs: programs, options: options,
                                           rtmpPort: endpoints.rtmpPort, httpPort: endpoints.httpPort)
        let stunnelConf = IngestConfig.stunnel(layout: layout, host: options.host,
                                               rtmpsPort: endpoints.rtmpsPort, rtmpPort: endpoints.rtmpPort)
        do {
            // It lists the allowed stream keys: the owner's only from the start, as the TLS keys are.
            try? FileManager.default.removeItem(atPath: layout.nginxConf)
            guard FileManager.default.createFile(atPath: layout.nginxConf, contents: Data(nginxConf.utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                throw IngestError.workDirectory(path: layout.root, message: "cannot write \(layout.nginxConf)")
            }
            try stunnelConf.write(toFile: layout.stunnelConf, atomically: true, encoding: .utf8)
        } catch {
            throw IngestError.workDirectory(path: layout.root, message: "cannot write configuration: \(error)")
        }
    }

    private func launchNginx() async throws {
        guard let layout, let programs, let endpoints else { throw IngestError.notStarted }
        for port in [endpoints.rtmpPort, endpoints.httpPort] where !FreePort.isFree(host: options.host, port: port) {
            throw IngestError.portInUse(port)
        }
        let errorLogStart = Self.fileSize(layout.nginxErrorLog)
        let process = ChildProcess(executable: programs.nginx,
                                   arguments: ["-p", layout.root + "/", "-c", layout.nginxConf, "-e", layout.nginxErrorLog],
                                   workingDirectory: layout.root,
                                   stdoutPath: layout.nginxOutput, stderrPath: layout.nginxOutput)
        do { try process.start() } catch { throw IngestError.startFailed(program: "nginx", log: "\(error)") }
        nginx = process
        try await waitForPorts(process: process, name: "nginx", ports: [endpoints.rtmpPort, endpoints.httpPort],
                               logs: [(layout.nginxErrorLog, errorLogStart), (layout.nginxOutput, 0)])
    }

    private func launchStunnel() async throws {
        guard let layout, let programs, let endpoints else { throw IngestError.notStarted }
        guard FreePort.isFree(host: options.host, port: endpoints.rtmpsPort) else { throw IngestError.portInUse(endpoints.rtmpsPort) }
        let logStart = Self.fileSize(layout.stunnelLog)
        let process = ChildProcess(executable: programs.stunnel, arguments: [layout.stunnelConf],
                                   workingDirectory: layout.root,
                                   stdoutPath: layout.stunnelLog, stderrPath: layout.stunnelLog)
        do { try process.start() } catch { throw IngestError.startFailed(program: "stunnel", log: "\(error)") }
        stunnel = process
        try await waitForPorts(process: process, name: "stunnel", ports: [endpoints.rtmpsPort],
                               logs: [(layout.stunnelLog, logStart)])
    }

    /// Waits until every port accepts TCP while the process lives and its log shows no bind error.
    /// On failure the process is killed and the error carries the log tail.
    private func waitForPorts(process: ChildProcess, name: String, ports: [Int], logs: [(String, Int)]) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: Self.startTimeout)
        func logText() -> String {
            logs.map { Self.readFile($0.0, from: $0.1) }.joined(separator: "\n")
        }
        while true {
            let text = logText()
            if text.contains("Address already in use") || text.contains("(98:") {
                await process.terminate(grace: .milliseconds(500))
                let port = ports.first { text.contains(":\($0)") } ?? ports[0]
                throw IngestError.portInUse(port)
            }
            if !process.isRunning {
                throw IngestError.startFailed(program: name, log: Self.tail(logText(), lines: 20) + "\n(exit status \(process.exitStatus ?? -1))")
            }
            var allOpen = true
            for port in ports where !PortProbe.isOpen(host: options.host, port: port) { allOpen = false; break }
            if allOpen { return }
            if clock.now >= deadline {
                await process.terminate(grace: .seconds(1))
                throw IngestError.startFailed(program: name, log: "ports \(ports) not open after \(Self.startTimeout)\n" + Self.tail(logText(), lines: 20))
            }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    static func readFile(_ path: String, from offset: Int) -> String {
        guard let data = FileManager.default.contents(atPath: path), data.count > offset else { return "" }
        return String(decoding: data[offset...], as: UTF8.self)
    }

    static func tail(_ text: String, lines: Int) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: true).suffix(lines).joined(separator: "\n")
    }
}
