import Foundation
import Testing
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A client of castline's control API for tests: requests through URLSession
/// (a client independent of `castline ctl`), server-sent events read from a
/// raw socket as they come.
struct ControlHTTP: Sendable {
    let port: Int
    var host = "127.0.0.1"

    struct Reply: Sendable {
        let status: Int
        let contentType: String
        let text: String

        /// The body as a JSON object (nil when it is not one).
        var json: [String: Any]? { (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] }
    }

    func request(_ method: String, _ path: String, body: String? = nil, contentType: String? = nil,
                 authorization: String? = nil) async throws -> Reply {
        guard let url = URL(string: "http://\(host):\(port)\(path)") else { throw ProbeError(message: "bad path \(path)") }
        var request = URLRequest(url: url)
        request.httpMethod = method
        request.timeoutInterval = 10
        if let body { request.httpBody = Data(body.utf8) }
        if let contentType { request.setValue(contentType, forHTTPHeaderField: "Content-Type") }
        if let authorization { request.setValue(authorization, forHTTPHeaderField: "Authorization") }
        let (data, response) = try await URLSession.shared.data(for: request)
        guard let http = response as? HTTPURLResponse else { throw ProbeError(message: "not an HTTP reply") }
        return Reply(status: http.statusCode, contentType: http.value(forHTTPHeaderField: "Content-Type") ?? "",
                     text: String(decoding: data, as: UTF8.self))
    }

    func get(_ path: String) async throws -> Reply { try await request("GET", path) }

    func post(_ path: String, json: String) async throws -> Reply {
        try await request("POST", path, body: json, contentType: "application/json")
    }

    /// Polls `GET /status` until `done` holds for its JSON (or `timeout` passes); returns the last one.
    func status(until done: ([String: Any]) -> Bool, timeout: Duration = .seconds(15)) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + timeout
        while true {
            let object = try await get("/status").json ?? [:]
            if done(object) || ContinuousClock.now >= deadline { return object }
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Connects to `GET path` and returns the first `count` server-sent events' data, as JSON objects.
    func events(_ path: String = "/events", count: Int, timeout: Duration = .seconds(10)) async throws -> [[String: Any]] {
        let lines = try await Self.offThread { [host, port] in
            try Self.readEvents(host: host, port: port, path: path, count: count, timeout: timeout)
        }
        return jsonLines(lines.joined(separator: "\n"))
    }

    private static func offThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }

    /// Blocking: sends the request, skips the head, undoes chunked framing and collects `data:` lines.
    private static func readEvents(host: String, port: Int, path: String, count: Int, timeout: Duration) throws -> [String] {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ProbeError(message: "socket failed") }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw ProbeError(message: "cannot connect to \(host):\(port)") }
        let request = Array("GET \(path) HTTP/1.1\r\nHost: \(host):\(port)\r\nAccept: text/event-stream\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }

        var raw = Data()
        var bytes = [UInt8](repeating: 0, count: 16_384)
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let n = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            raw.append(contentsOf: bytes[0..<n])
            let found = dataLines(in: raw)
            if found.count >= count { return Array(found.prefix(count)) }
        }
        throw ProbeError(message: "fewer than \(count) events within \(timeout): \(String(decoding: raw, as: UTF8.self))")
    }

    /// The `data:` payloads of what arrived so far (head and chunk framing skipped).
    static func dataLines(in raw: Data) -> [String] {
        let bytes = [UInt8](raw)
        let crlf: [UInt8] = [13, 10]
        func find(_ needle: [UInt8], from start: Int) -> Int? {
            guard bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
            return (start...(bytes.count - needle.count)).first { Array(bytes[$0..<$0 + needle.count]) == needle }
        }
        guard let headEnd = find(crlf + crlf, from: 0) else { return [] }
        let head = String(decoding: bytes[0..<headEnd], as: UTF8.self).lowercased()
        var body = Array(bytes[(headEnd + 4)...])
        if head.contains("transfer-encoding: chunked") {
            var plain: [UInt8] = []
            var position = headEnd + 4
            while let lineEnd = find(crlf, from: position),
                  let size = Int(String(decoding: bytes[position..<lineEnd], as: UTF8.self), radix: 16), size > 0,
                  lineEnd + 2 + size <= bytes.count {
                plain += bytes[(lineEnd + 2)..<(lineEnd + 2 + size)]
                position = lineEnd + 2 + size + 2
            }
            body = plain
        }
        return String(decoding: body, as: UTF8.self).split(separator: "\n")
            .filter { $0.hasPrefix("data: ") }.map { String($0.dropFirst(6)) }
    }
}

/// The latency stage's readings (of the test signal's clock) through `/status`.
extension ControlHTTP {
    /// The latest sound latency in a `/status` reply, when reported after `after`.
    static func latency(in status: [String: Any], after: Date) -> Double? {
        let stats = status["stats"] as? [[String: Any]] ?? []
        guard let sample = stats.first(where: { $0["latency_audio_s"] != nil }),
              let time = DelayListener.time(sample), time > after else { return nil }
        return sample["latency_audio_s"] as? Double
    }

    /// The first sound latency reported after `after`.
    func latency(after: Date, timeout: Duration = .seconds(15)) async throws -> Double {
        let status = try await status(until: { Self.latency(in: $0, after: after) != nil }, timeout: timeout)
        return try #require(Self.latency(in: status, after: after), "no latency read: \(status)")
    }

    /// Once `seconds` and a half of history is held, moves the delay from 0 to `seconds`: the
    /// latency read before, and after the move has had 1.5 s to show.
    /// `moved`: how far the delay applied moved, as the answer said (a move goes on after what
    /// went out, so up to a unit's length more than asked).
    func latencyAcrossDelay(to seconds: Double, historyTimeout: Duration) async throws -> (before: Double, after: Double, moved: Double) {
        let held = try await status(until: { ($0["available_delay_s"] as? Double ?? 0) >= seconds + 0.5 }, timeout: historyTimeout)
        let before = try await latency(after: Date())
        let movedAt = Date()
        let answer = try await post("/delay", json: "{\"seconds\": \(seconds)}")
        #expect(answer.status == 200)
        let moved = (answer.json?["delay_s"] as? Double ?? .nan) - (held["delay_s"] as? Double ?? .nan)
        #expect(moved >= seconds - 0.001 && moved < seconds + 0.05, "asked to move to \(seconds) s: \(answer.text)")
        return (before, try await latency(after: movedAt.addingTimeInterval(1.5)), moved)
    }
}
