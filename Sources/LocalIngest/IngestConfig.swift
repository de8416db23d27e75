import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The external programs the ingest needs, located on this machine.
struct IngestPrograms: Sendable {
    var nginx: String
    var rtmpModule: String
    var stunnel: String
    var openssl: String

    static let rtmpModuleCandidates = [
        "/usr/lib/nginx/modules/ngx_rtmp_module.so",
        "/usr/lib64/nginx/modules/ngx_rtmp_module.so",
        "/usr/share/nginx/modules/ngx_rtmp_module.so",
        "/usr/local/lib/nginx/modules/ngx_rtmp_module.so",
    ]

    static func locate(rtmpModulePath: String? = nil) throws -> IngestPrograms {
        guard let nginx = ChildProcess.which("nginx") else {
            throw IngestError.missingProgram(name: "nginx", debianPackage: "nginx-light")
        }
        let env = ProcessInfo.processInfo.environment["CASTLINE_NGINX_RTMP_MODULE"]
        guard let module = ([rtmpModulePath, env].compactMap { $0 } + rtmpModuleCandidates).first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw IngestError.missingProgram(name: "the nginx RTMP module", debianPackage: "libnginx-mod-rtmp")
        }
        guard let stunnel = ChildProcess.which("stunnel4") ?? ChildProcess.which("stunnel") else {
            throw IngestError.missingProgram(name: "stunnel4", debianPackage: "stunnel4")
        }
        guard let openssl = ChildProcess.which("openssl") else {
            throw IngestError.missingProgram(name: "openssl", debianPackage: "openssl")
        }
        return IngestPrograms(nginx: nginx, rtmpModule: module, stunnel: stunnel, openssl: openssl)
    }
}

/// File layout inside the work directory.
struct IngestLayout: Sendable {
    let root: String
    var logs: String { root + "/logs" }
    var tls: String { root + "/tls" }
    var temp: String { root + "/tmp" }
    var hls: String { root + "/hls" }
    var nginxConf: String { root + "/nginx.conf" }
    var nginxPID: String { root + "/nginx.pid" }
    var nginxErrorLog: String { logs + "/nginx-error.log" }
    var nginxOutput: String { logs + "/nginx.out" }
    var rtmpAccessLog: String { logs + "/rtmp-access.log" }
    var httpAccessLog: String { logs + "/http-access.log" }
    var stunnelConf: String { root + "/stunnel.conf" }
    var stunnelPID: String { root + "/stunnel.pid" }
    var stunnelLog: String { logs + "/stunnel.log" }
    var caKey: String { tls + "/ca.key" }
    var caCert: String { tls + "/ca.pem" }
    /// The host the certificates were made for (they are made again for another).
    var certificateHost: String { tls + "/host" }
    /// The ports of the last start, `RTMP RTMPS HTTP`: a kept directory starts on them again.
    var ports: String { root + "/ports" }
    var serverKey: String { tls + "/server.key" }

    /// The ports a start in this directory bound, if one did.
    func savedPorts() -> (rtmp: Int, rtmps: Int, http: Int)? {
        guard let text = try? String(contentsOfFile: ports, encoding: .utf8) else { return nil }
        let numbers = text.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        return numbers.count == 3 ? (numbers[0], numbers[1], numbers[2]) : nil
    }

    func savePorts(_ bound: (rtmp: Int, rtmps: Int, http: Int)) {
        try? "\(bound.rtmp) \(bound.rtmps) \(bound.http)\n".write(toFile: ports, atomically: true, encoding: .utf8)
    }
    var serverCSR: String { tls + "/server.csr" }
    var serverCert: String { tls + "/server.pem" }
    var opensslConf: String { tls + "/openssl.cnf" }

    func createDirectories() throws {
        for dir in [root, logs, tls, temp, hls] {
            do {
                try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            } catch {
                throw IngestError.workDirectory(path: dir, message: "\(error)")
            }
        }
        // nginx's logs name every stream key tried (its publish lines, the key check's requests), and
        // the HLS folder's files are named after the keys: the owner's only.
        chmod(logs, 0o700)
        chmod(hls, 0o700)
    }
}

enum IngestConfig {
    static func listenAddress(_ host: String, _ port: Int) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    static func milliseconds(_ d: Duration) -> Int {
        Int(d.components.seconds * 1000 + d.components.attoseconds / 1_000_000_000_000_000)
    }

    static func validate(key: String) throws {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~")
        guard !key.isEmpty, !key.hasPrefix("~"), key.allSatisfy({ allowed.contains($0) }) else {
            throw IngestError.invalidStreamKey(key)
        }
    }

    /// nginx runs as one foreground process (`master_process off; daemon off;`) as the invoking
    /// user; every path it writes is inside the work directory.
    static func nginx(layout: IngestLayout, programs: IngestPrograms, options: IngestOptions,
                      rtmpPort: Int, httpPort: Int) -> String {
        let host = options.host
        var userLine = ""
        if geteuid() == 0, let pw = getpwuid(geteuid()), let gr = getgrgid(getegid()) {
            // As root nginx would chown its paths to "nobody"; keep everything owned by us.
            userLine = "user \(String(cString: pw.pointee.pw_name)) \(String(cString: gr.pointee.gr_name));\n"
        }
        var publishAuth = ""
        var authMap = ""
        var authLocation = ""
        if let keys = options.allowedKeys {
            let authHost = host.contains(":") ? "[\(host)]" : host
            publishAuth = """
                        notify_method get;
                        on_publish http://\(authHost):\(httpPort)/auth;

            """
            let entries = keys.sorted().map { "        \"\($0)\" 1;\n" }.joined()
            authMap = """
                map $arg_name $castline_publish_allowed {
                    default 0;
            \(entries)    }

            """
            authLocation = """
                    location = /auth {
                        access_log off;
                        if ($castline_publish_allowed = 0) { return 403; }
                        return 200;
                    }

            """
        }
        return """
        # Generated by castline LocalIngest.
        load_module \(programs.rtmpModule);
        \(userLine)master_process off;
        daemon off;
        worker_processes 1;
        pid \(layout.nginxPID);
        lock_file \(layout.root)/nginx.lock;
        error_log \(layout.nginxErrorLog) info;

        events {
            worker_connections 512;
        }

        rtmp {
            access_log \(layout.rtmpAccessLog);
            server {
                listen \(listenAddress(host, rtmpPort));
                chunk_size 4096;
                application live {
                    live on;
                    record off;
                    hls on;
                    hls_path \(layout.hls);
                    hls_fragment \(milliseconds(options.fragment))ms;
                    hls_playlist_length \(milliseconds(options.playlistLength))ms;
        \(publishAuth)        }
            }
        }

        http {
            access_log \(layout.httpAccessLog);
            client_body_temp_path \(layout.temp)/body;
            proxy_temp_path \(layout.temp)/proxy;
            fastcgi_temp_path \(layout.temp)/fastcgi;
            uwsgi_temp_path \(layout.temp)/uwsgi;
            scgi_temp_path \(layout.temp)/scgi;
            default_type application/octet-stream;
        \(authMap)    server {
                listen \(listenAddress(host, httpPort));
                location /hls {
                    types {
                        application/vnd.apple.mpegurl m3u8;
                        video/mp2t ts;
                    }
                    root \(layout.root);
                    add_header Cache-Control no-cache;
                    add_header Access-Control-Allow-Origin *;
                }
                location /stat {
                    rtmp_stat all;
                }
        \(authLocation)    }
        }

        """
    }

    /// `foreground = yes` makes stunnel log to stderr, which the spawn sends to logs/stunnel.log
    /// (so early configuration errors land there too).
    static func stunnel(layout: IngestLayout, host: String, rtmpsPort: Int, rtmpPort: Int) -> String {
        """
        ; Generated by castline LocalIngest.
        foreground = yes
        pid = \(layout.stunnelPID)
        debug = 5

        [rtmps]
        accept = \(host):\(rtmpsPort)
        connect = \(host):\(rtmpPort)
        cert = \(layout.serverCert)
        key = \(layout.serverKey)

        """
    }
}

/// A CA and a server certificate signed by it, made with the openssl CLI.
enum Certificates {
    /// The server certificate's SHA-256 fingerprint, made fresh or, in a kept work directory, the one
    /// made there before for the same host while it is good for another day (a restarted ingest is
    /// then the same server: a publisher that trusts its CA or pins it reconnects).
    static func prepare(layout: IngestLayout, openssl: String, host: String) async throws -> String {
        let manager = FileManager.default
        let made = [layout.caCert, layout.caKey, layout.serverCert, layout.serverKey].allSatisfy(manager.fileExists(atPath:))
        if made, (try? String(contentsOfFile: layout.certificateHost, encoding: .utf8)) == host,
           (try? await step(openssl, ["x509", "-in", layout.serverCert, "-noout", "-checkend", "86400"])) != nil {
            return try await fingerprint(layout: layout, openssl: openssl)
        }
        let fingerprint = try await generate(layout: layout, openssl: openssl, host: host)
        try? host.write(toFile: layout.certificateHost, atomically: true, encoding: .utf8)
        return fingerprint
    }

    static func generate(layout: IngestLayout, openssl: String, host: String) async throws -> String {
        var sans = ["IP:127.0.0.1", "DNS:localhost", "IP:::1"]
        let isIP = host.allSatisfy { $0.isHexDigit || $0 == "." || $0 == ":" }
        let extra = isIP ? "IP:\(host)" : "DNS:\(host)"
        if !sans.contains(extra) { sans.append(extra) }
        let conf = """
        [req]
        distinguished_name = dn
        prompt = no
        [dn]
        CN = castline local ingest CA
        [v3_ca]
        basicConstraints = critical, CA:TRUE
        keyUsage = critical, keyCertSign, cRLSign
        subjectKeyIdentifier = hash
        [v3_server]
        basicConstraints = critical, CA:FALSE
        keyUsage = critical, digitalSignature, keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = \(sans.joined(separator: ", "))
        subjectKeyIdentifier = hash
        authorityKeyIdentifier = keyid, issuer

        """
        do {
            try conf.write(toFile: layout.opensslConf, atomically: true, encoding: .utf8)
        } catch {
            throw IngestError.certificateFailed("cannot write \(layout.opensslConf): \(error)")
        }
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await step(openssl, ["req", "-x509"] + ec + ["-keyout", layout.caKey, "-out", layout.caCert,
                                                         "-days", "30", "-config", layout.opensslConf, "-extensions", "v3_ca"])
        try await step(openssl, ["req", "-new"] + ec + ["-keyout", layout.serverKey, "-out", layout.serverCSR,
                                                        "-config", layout.opensslConf, "-subj", "/CN=localhost"])
        let serial = "0x" + (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255) & 0x7f) }.joined()
        try await step(openssl, ["x509", "-req", "-in", layout.serverCSR, "-CA", layout.caCert, "-CAkey", layout.caKey,
                                 "-set_serial", serial, "-days", "30", "-out", layout.serverCert,
                                 "-extfile", layout.opensslConf, "-extensions", "v3_server"])
        chmod(layout.caKey, 0o600)
        chmod(layout.serverKey, 0o600)
        return try await fingerprint(layout: layout, openssl: openssl)
    }

    private static func fingerprint(layout: IngestLayout, openssl: String) async throws -> String {
        let out = try await step(openssl, ["x509", "-in", layout.serverCert, "-noout", "-fingerprint", "-sha256"])
        // "sha256 Fingerprint=AB:CD:..." (older versions: "SHA256 Fingerprint=")
        guard let eq = out.firstIndex(of: "=") else { throw IngestError.certificateFailed("unexpected fingerprint output: \(out)") }
        return out[out.index(after: eq)...].trimmingCharacters(in: .whitespacesAndNewlines).uppercased()
    }

    @discardableResult
    private static func step(_ openssl: String, _ args: [String]) async throws -> String {
        let result: (status: Int32, stdout: String, stderr: String)
        do {
            result = try await ChildProcess.run(openssl, args, timeout: .seconds(20))
        } catch {
            throw IngestError.certificateFailed("openssl \(args.first ?? ""): \(error)")
        }
        guard result.status == 0 else {
            throw IngestError.certificateFailed("openssl \(args.joined(separator: " ")) exited with \(result.status): \(result.stderr)")
        }
        return result.stdout
    }
}
