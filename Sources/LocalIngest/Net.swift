import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Errors from the small socket helpers.
public enum SocketError: Error, Sendable, CustomStringConvertible {
    case resolve(host: String, message: String)
    case system(call: String, errno: Int32)

    public var description: String {
        switch self {
        case .resolve(let host, let message): return "cannot resolve \(host): \(message)"
        case .system(let call, let err): return "\(call) failed: \(String(cString: strerror(err)))"
        }
    }
}

/// Resolves a numeric or named host to a stream-socket address and calls `body` with it.
func withSocketAddress<T>(host: String, port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) throws -> T) throws -> T {
    var hints = addrinfo()
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    hints.ai_flags = AI_NUMERICSERV
    var result: UnsafeMutablePointer<addrinfo>?
    let rc = getaddrinfo(host, String(port), &hints, &result)
    guard rc == 0, let info = result else {
        throw SocketError.resolve(host: host, message: String(cString: gai_strerror(rc)))
    }
    defer { freeaddrinfo(info) }
    return try body(info.pointee.ai_family, info.pointee.ai_addr, info.pointee.ai_addrlen)
}

private func makeSocket(family: Int32, datagram: Bool = false) throws -> Int32 {
    let type = datagram ? Int32(SOCK_DGRAM.rawValue) : Int32(SOCK_STREAM.rawValue)
    let fd = socket(family, type | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw SocketError.system(call: "socket", errno: errno) }
    return fd
}

public enum FreePort {
    /// Binds port 0 on `host` (TCP, or UDP for a `datagram` port: SRT), reads the port the kernel
    /// chose, closes the socket.
    public static func find(host: String = "127.0.0.1", datagram: Bool = false) throws -> Int {
        try withSocketAddress(host: host, port: 0) { family, addr, len in
            let fd = try makeSocket(family: family, datagram: datagram)
            defer { close(fd) }
            guard bind(fd, addr, len) == 0 else { throw SocketError.system(call: "bind", errno: errno) }
            var storage = sockaddr_storage()
            var storageLen = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let ok = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &storageLen) }
            }
            guard ok == 0 else { throw SocketError.system(call: "getsockname", errno: errno) }
            let family = Int32(storage.ss_family)
            let port: UInt16 = withUnsafePointer(to: &storage) { ptr in
                if family == AF_INET6 {
                    return ptr.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_port }
                }
                return ptr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
            }
            return Int(UInt16(bigEndian: port))
        }
    }

    /// `count` different free TCP ports: asked one at a time, the kernel may hand out a port twice.
    public static func find(_ count: Int, host: String = "127.0.0.1") throws -> [Int] {
        var ports: [Int] = []
        while ports.count < count {
            let port = try find(host: host)
            if !ports.contains(port) { ports.append(port) }
        }
        return ports
    }

    /// True when a listening socket could be bound to `host:port` right now (with SO_REUSEADDR, as
    /// nginx and stunnel do).
    /// A `datagram` port (UDP: SRT) is free when it can be bound.
    public static func isFree(host: String = "127.0.0.1", port: Int, datagram: Bool = false) -> Bool {
        (try? withSocketAddress(host: host, port: port) { family, addr, len -> Bool in
            let fd = try makeSocket(family: family, datagram: datagram)
            defer { close(fd) }
            if datagram { return bind(fd, addr, len) == 0 }
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            return bind(fd, addr, len) == 0 && listen(fd, 1) == 0
        }) ?? false
    }

    /// Waits until something has bound the UDP port (a listener that takes no connection to check).
    /// Read from the kernel's socket tables, not by binding the port to see: a probe holding it
    /// for an instant made the very listener it waited for fail to bind, now and then.
    public static func waitUntilTaken(datagram port: Int, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while !isBound(datagram: port) {
            guard ContinuousClock.now < deadline else { return false }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return true
    }

    /// Whether a UDP socket of this machine is bound to `port` (any address), from /proc/net/udp
    /// and udp6: the local address's port is the hex after the colon of the second column.
    static func isBound(datagram port: Int) -> Bool {
        ["/proc/net/udp", "/proc/net/udp6"].contains { table in
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { return false }
            return text.split(separator: "\n").dropFirst().contains { line in
                let columns = line.split(separator: " ")
                guard columns.count > 1, let local = columns[1].split(separator: ":").last else { return false }
                return Int(local, radix: 16) == port
            }
        }
    }
}

/// Wait until a TCP port accepts connections.
public enum PortProbe {
    /// One connection attempt (non-blocking connect, at most `timeout`).
    public static func isOpen(host: String, port: Int, timeout: Duration = .milliseconds(500)) -> Bool {
        (try? withSocketAddress(host: host, port: port) { family, addr, len -> Bool in
            let fd = try makeSocket(family: family)
            defer { close(fd) }
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            if connect(fd, addr, len) == 0 { return true }
            guard errno == EINPROGRESS else { return false }
            var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ms = Int32(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            guard poll(&pfd, 1, ms) == 1 else { return false }
            var soError: Int32 = 0
            var soLen = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &soLen)
            return soError == 0
        }) ?? false
    }

    public static func waitUntilOpen(host: String, port: Int, timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { isOpen(host: host, port: port) }
    }

    /// Waits until connections to the port are refused (nothing listens any more).
    public static func waitUntilClosed(host: String, port: Int, timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { !isOpen(host: host, port: port) }
    }

    /// Whether something listens on a local TCP port, read from /proc/net/tcp and tcp6: no
    /// connection is made (a server that takes one, as `ffmpeg -listen 1`, would spend it on a probe).
    public static func isListening(port: Int) -> Bool {
        let wanted = String(format: ":%04X", port)
        return ["/proc/net/tcp", "/proc/net/tcp6"].contains { table in
            guard let text = try? String(contentsOfFile: table, encoding: .utf8) else { return false }
            return text.split(separator: "\n").dropFirst().contains { line in
                let fields = line.split(separator: " ")
                return fields.count > 3 && fields[1].hasSuffix(wanted) && fields[3] == "0A"  // 0A: LISTEN
            }
        }
    }

    public static func waitUntilListening(port: Int, timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { isListening(port: port) }
    }

    private static func wait(timeout: Duration, until done: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            if done() { return true }
            if ContinuousClock.now >= deadline { return false }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }
}
