import Foundation
import HTTPClient

/// `castline ctl`'s client of the control API (loopback or a trusted network, plain HTTP),
/// over castline's one HTTP client: replies read whole or, for server-sent events, line by
/// line as they come.
struct ControlClient: Sendable {
    let host: String
    let port: Int
    let token: String?
    /// A request with no reply in this long has failed; an event stream may stay quiet.
    private let http = HTTPFetcher(idleTimeout: .seconds(30))

    typealias Reply = HTTPResponse

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

    init(host: String, port: Int, token: String?) {
        self.host = host
        self.port = port
        self.token = token
    }

    var address: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Sends one request and reads the whole reply.
    func send(_ method: String, _ target: String, body: Data? = nil, contentType: String? = nil) async throws(Failure) -> Reply {
        let url = try url(target)
        do {
            return try await http.fetch(method, url, headers: headers(accept: "application/json", contentType: contentType), body: body)
        } catch {
            throw failure(error)
        }
    }

    /// Sends a GET for a stream of server-sent events: `line` gets each line of the body
    /// (without its line end) until the server ends the stream. A refusal (not 2xx) is
    /// returned whole instead.
    /// `line` is given each line as it comes, until it returns false (nobody reads what it writes).
    func stream(_ target: String, line: @Sendable (String) -> Bool) async throws(Failure) -> Reply? {
        let url = try url(target)
        do {
            let reply = try await http.send("GET", url, headers: headers(accept: "text/event-stream", contentType: nil), idleTimeout: nil)
            guard (200..<300).contains(reply.status) else { return try await reply.whole(of: url) }
            var pending = Data()
            for try await chunk in reply.body {
                pending.append(chunk)
                while let end = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    var text = String(decoding: pending[pending.startIndex..<end], as: UTF8.self)
                    if text.hasSuffix("\r") { text.removeLast() }
                    pending.removeSubrange(pending.startIndex...end)
                    guard line(text) else { return nil }
                }
            }
            return nil
        } catch let error as FetchError {
            throw failure(error)
        } catch {
            throw .broken("\(error)")
        }
    }

    private func url(_ target: String) throws(Failure) -> URL {
        guard let url = URL(string: "http://\(address)\(target)") else { throw .broken("\(target) is not a request target") }
        return url
    }

    private func headers(accept: String, contentType: String?) -> [String: String] {
        var headers = ["Accept": accept]
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if let contentType { headers["Content-Type"] = contentType }
        return headers
    }

    private func failure(_ error: FetchError) -> Failure {
        if case .refused = error { return .notListening(address) }
        return .broken("\(error)")
    }
}
