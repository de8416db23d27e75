import Foundation
import GstKit
#if canImport(Glibc)
import Glibc
#endif

/// A small HTTP/1.1 client for the control API (loopback or a trusted
/// network, plain HTTP): one request per connection, replies read whole or,
/// for server-sent events, line by line as they come. Blocking socket work
/// runs off the cooperative thread pool.
struct ControlClient: Sendable {
    let host: String
    let port: Int
    let token: String?

    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]  // lower-cased names
        var body: Data
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    enum Failure: Error, CustomStringConvertible {
        /// Nothing listens there (connection refused, or the host cannot be reached).
        case notListening(String)
        case broken(String)

        var description: String {
            switch self {
            case .notListening(let address):
                "no castline control API at \(address); start castline with --control \(address)"
            case .broken(let message): message
            }
        }
    }

    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Sends one request and reads the whole reply.
    func send(_ method: String, _ target: String, body: Data? = nil, contentType: String? = nil,
              timeout: Duration = .seconds(30)) async throws -> Reply {
        try await onOwnThread {
            let connection = try open(timeout: timeout)
            defer { connection.disconnect() }
            try connection.write(request(method, target, body: body, contentType: contentType))
            var reply = try connection.readHead()
            reply.body = try connection.readBody(headers: reply.headers) { _ in }
            return reply
        }
    }

    /// Sends a GET for a stream of server-sent events: `line` gets each line
    /// of the body (without its line end) until the server ends the stream.
    /// A refusal (not 2xx) is returned whole instead.
    func stream(_ target: String, line: @escaping @Sendable (String) -> Void) async throws -> Reply? {
        try await onOwnThread {
            let connection = try open(timeout: nil)
            defer { connection.disconnect() }
            try connection.write(request("GET", target, body: nil, contentType: nil, accept: "text/event-stream"))
            var reply = try connection.readHead()
            guard (200..<300).contains(reply.status) else {
                reply.body = try connection.readBody(headers: reply.headers) { _ in }
                return reply
            }
            var pending = Data()
            _ = try connection.readBody(headers: reply.headers) { chunk in
                pending.append(chunk)
                while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    var text = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
                    if text.hasSuffix("\r") { text.removeLast() }
                    pending.removeSubrange(pending.startIndex...end)
                    line(text)
                }
            }
            return nil
        }
    }

    private func request(_ method: String, _ target: String, body: Data?, contentType: String?,
                         accept: String = "application/json") -> Data {
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(address)\r\nAccept: \(accept)\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if let contentType { head += "Content-Type: \(contentType)\r\n" }
        head += "Content-Length: \(body?.count ?? 0)\r\n\r\n"
        return Data(head.utf8) + (body ?? Data())
    }

    private func open(timeout: Duration?) throws -> SocketConnection {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var found: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &found) == 0, let info = found else {
            throw Failure.notListening(address)
        }
        defer { freeaddrinfo(info) }
        let fd = socket(info.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw Failure.broken("cannot make a socket: \(String(cString: strerror(errno)))") }
        if let timeout {
            var limit = timeval(tv_sec: Int(timeout.components.seconds), tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
            setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        }
        guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            close(fd)
            throw Failure.notListening(address)
        }
        return SocketConnection(fd: fd, address: address)
    }

}

/// A connected socket with a read buffer: the reply's head, then its body
/// (by `Content-Length`, chunked, or to the end of the connection).
private final class SocketConnection {
    private let fd: Int32
    private let address: String
    private var buffer = Data()
    private var ended = false

    init(fd: Int32, address: String) {
        self.fd = fd
        self.address = address
    }

    func disconnect() { close(fd) }

    func write(_ data: Data) throws {
        var sent = 0
        while sent < data.count {
            let count = data[data.startIndex + sent..<data.endIndex].withUnsafeBytes {
                send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw broken("sending the request failed") }
            sent += count
        }
    }

    func readHead() throws -> ControlClient.Reply {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/"), let status = Int(parts[1]) else {
            throw broken("\(address) did not answer in HTTP (\(statusLine.prefix(40)))")
        }
        var headers: [String: String] = [:]
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return ControlClient.Reply(status: status, headers: headers, body: Data())
    }

    /// Reads the body, handing each piece to `piece` as it arrives; returns it whole.
    func readBody(headers: [String: String], piece: (Data) -> Void) throws -> Data {
        var body = Data()
        func take(_ data: Data) {
            body.append(data)
            piece(data)
        }
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine.split(separator: ";").first.map(String.init) ?? "", radix: 16) else {
                    throw broken("bad chunk size from \(address)")
                }
                if size == 0 { break }
                take(try read(count: size))
                _ = try readLine()
            }
        } else if let length = headers["content-length"].flatMap(Int.init) {
            take(try read(count: length))
        } else {
            while try fill() {
                take(buffer)
                buffer.removeAll()
            }
        }
        return body
    }

    private func readLine() throws -> String {
        while true {
            if let end = buffer.firstIndex(of: UInt8(ascii: "\n")) {
                var line = String(decoding: buffer[buffer.startIndex..<end], as: UTF8.self)
                if line.hasSuffix("\r") { line.removeLast() }
                buffer.removeSubrange(buffer.startIndex...end)
                return line
            }
            guard try fill() else { throw broken("\(address) closed the connection mid-reply") }
        }
    }

    private func read(count: Int) throws -> Data {
        while buffer.count < count {
            guard try fill() else { throw broken("\(address) closed the connection mid-reply") }
        }
        let data = Data(buffer.prefix(count))
        buffer.removeSubrange(buffer.startIndex..<buffer.startIndex + count)
        return data
    }

    /// Reads more into the buffer; false at the end of the connection.
    private func fill() throws -> Bool {
        guard !ended else { return false }
        var bytes = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: bytes[0..<count])
                return true
            }
            if count == 0 {
                ended = true
                return false
            }
            if errno == EINTR { continue }
            throw broken(errno == EAGAIN ? "\(address) did not answer in time" : "reading from \(address) failed: \(String(cString: strerror(errno)))")
        }
    }

    private func broken(_ message: String) -> ControlClient.Failure { .broken(message) }
}
