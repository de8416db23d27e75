import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Why a fetch failed. Network trouble (`network`, `timedOut`, 5xx) is worth
/// retrying; a 4xx mostly is not.
public enum FetchError: Error, Equatable, Sendable, CustomStringConvertible {
    case http(status: Int, url: String)
    case network(String, url: String)
    case timedOut(url: String, after: Duration)
    case tooManyRedirects(url: String, limit: Int)
    case tooLarge(url: String, limit: Int)
    /// Nothing accepts connections there (refused, or the host is unreachable).
    case refused(url: String)
    /// The host's name does not resolve (no such name, or no DNS answer).
    case hostNotFound(url: String)
    case cancelled

    public var description: String {
        switch self {
        case .http(let status, let url): "the server answered HTTP \(status) for \(url)"
        case .network(let why, let url): "cannot fetch \(url): \(why)"
        case .timedOut(let url, let after): "no answer from \(url) within \(after.components.seconds) s"
        case .tooManyRedirects(let url, let limit): "more than \(limit) redirects from \(url) (a redirect loop?)"
        case .tooLarge(let url, let limit): "\(url) is larger than \(limit / 1024 / 1024) MB"
        case .refused(let url): "nothing answers at \(url) (connection refused)"
        case .hostNotFound(let url): "the host of \(url) is not found (its name does not resolve)"
        case .cancelled: "cancelled"
        }
    }

    /// Trouble that may pass (the network, the server's own errors, a timeout).
    public var isTransient: Bool {
        switch self {
        case .network, .timedOut, .refused, .hostNotFound: true
        case .http(let status, _): status >= 500 || status == 408 || status == 429
        default: false
        }
    }
}

/// What reading HLS takes from HTTP: GETs, their bodies streamed as the bytes arrive.
public protocol HTTPGetting: Sendable {
    /// The body of `url` (the bytes of `range` only, when given) as chunks; a status other
    /// than 2xx ends it with `FetchError.http`.
    func stream(_ url: URL, range: ByteRange?) -> AsyncThrowingStream<Data, any Error>
}

extension HTTPGetting {
    /// The whole body, refused past `limit` bytes.
    public func data(_ url: URL, range: ByteRange? = nil, limit: Int = 64 * 1024 * 1024) async throws(FetchError) -> Data {
        try await HTTPFetcher.collect(stream(url, range: range), url: url, limit: limit)
    }
}

/// castline's HTTP client: requests over one URLSession (persistent connections), bodies
/// streamed as the bytes arrive. Timeouts are enforced here, not left to URLSession: on
/// Linux its request timeout is not honoured when a server accepts and never answers.
/// Redirects are followed up to `maxRedirects`.
public final class HTTPFetcher: HTTPGetting {
    public static let shared = HTTPFetcher()
    public static let maxRedirects = 10
    /// What `idleTimeout` is unless a source asks for another.
    public static let defaultIdleTimeout: Duration = .seconds(10)

    /// No byte for this long (before the headers, or between chunks) ends the fetch.
    public let idleTimeout: Duration
    private let session: URLSession
    private let router: TaskRouter

    /// `followsRedirects` false: a redirect is the answer, for a caller that repeats a request
    /// with its body itself (FoundationNetworking drops the body of a POST it redirects).
    public init(idleTimeout: Duration = HTTPFetcher.defaultIdleTimeout, followsRedirects: Bool = true) {
        self.idleTimeout = idleTimeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 6
        configuration.timeoutIntervalForRequest = 3600  // ours is `idleTimeout`
        let router = TaskRouter(followsRedirects: followsRedirects)
        self.router = router
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    /// A session holds its delegate and connections until invalidated (a source's own fetcher goes with it).
    deinit { session.finishTasksAndInvalidate() }

    /// The body of `url` (the bytes of `range` only, when given) as chunks, as they arrive;
    /// a status other than 2xx ends it with `FetchError.http`.
    public func stream(_ url: URL, range: ByteRange? = nil) -> AsyncThrowingStream<Data, any Error> {
        var request = Self.request("GET", url)
        if let range { request.setValue(range.header, forHTTPHeaderField: "Range") }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self)
        start(request, Transfer(url: url, range: range, continuation: continuation), idleTimeout: idleTimeout)
        return stream
    }

    /// Any request: the reply's status and headers as soon as they come, whatever the status,
    /// its body streamed after. `idleTimeout` nil: the body may stay quiet as long as it likes
    /// (a stream of server-sent events).
    public func send(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil,
                     idleTimeout: Duration?) async throws(FetchError) -> HTTPReply {
        var request = Self.request(method, url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = body
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self)
        do {
            let head = try await withCheckedThrowingContinuation { (head: CheckedContinuation<HTTPURLResponse, any Error>) in
                start(request, Transfer(url: url, range: nil, continuation: continuation, head: head), idleTimeout: idleTimeout)
            }
            var names: [String: String] = [:]
            for case let (name as String, value as String) in head.allHeaderFields { names[name.lowercased()] = value }
            return HTTPReply(status: head.statusCode, headers: names, body: stream)
        } catch let error as FetchError {
            throw error
        } catch {
            throw .network("\(error)", url: url.absoluteString)
        }
    }

    /// A request whose reply is read whole (refused past `limit` bytes).
    public func fetch(_ method: String, _ url: URL, headers: [String: String] = [:], body: Data? = nil,
                      limit: Int = 64 * 1024 * 1024) async throws(FetchError) -> HTTPResponse {
        try await send(method, url, headers: headers, body: body, idleTimeout: idleTimeout).whole(of: url, limit: limit)
    }

    private static func request(_ method: String, _ url: URL) -> URLRequest {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 3600)
        request.httpMethod = method
        request.setValue("castline", forHTTPHeaderField: "User-Agent")
        return request
    }

    private func start(_ request: URLRequest, _ transfer: Transfer, idleTimeout: Duration?) {
        let continuation = transfer.continuation
        let task = session.dataTask(with: request)
        router.add(task, transfer)
        // Only a consumer that stops listening cancels: a transfer that finished has ended its
        // task already, or is ending it (FoundationNetworking traps when a task is cancelled
        // while a redirect is pending).
        continuation.onTermination = { [router] termination in
            guard case .cancelled = termination else { return }
            router.remove(task)
            task.cancel()
        }
        task.resume()
        if let idleTimeout { watch(task, transfer, timeout: idleTimeout) }
    }

    /// A streamed body, whole.
    static func collect(_ stream: AsyncThrowingStream<Data, any Error>, url: URL, limit: Int) async throws(FetchError) -> Data {
        var body = Data()
        do {
            for try await chunk in stream {
                body.append(chunk)
                if body.count > limit { throw FetchError.tooLarge(url: url.absoluteString, limit: limit) }
            }
            // A cancelled stream ends without an error: what came is not the whole body.
            if Task.isCancelled { throw FetchError.cancelled }
        } catch let error as FetchError {
            throw error
        } catch {
            throw .cancelled
        }
        return body
    }

    /// Ends a transfer that has gone quiet for `timeout`.
    private func watch(_ task: URLSessionDataTask, _ transfer: Transfer, timeout: Duration) {
        Task.detached { [router] in
            while true {
                try? await Task.sleep(for: .milliseconds(250))
                guard let quiet = transfer.quietFor() else { return }  // done
                if quiet >= timeout {
                    transfer.finish(throwing: FetchError.timedOut(url: transfer.url.absoluteString, after: timeout))
                    router.remove(task)
                    task.cancel()
                    return
                }
            }
        }
    }
}

/// A reply whose body is still coming (`HTTPFetcher.send`).
public struct HTTPReply: Sendable {
    public var status: Int
    /// Lower-cased names.
    public var headers: [String: String]
    public var body: AsyncThrowingStream<Data, any Error>

    /// The reply with its body read whole (refused past `limit` bytes); `url` names it in errors.
    public func whole(of url: URL, limit: Int = 64 * 1024 * 1024) async throws(FetchError) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers, body: try await HTTPFetcher.collect(body, url: url, limit: limit))
    }
}

/// A reply read whole (`HTTPFetcher.fetch`).
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Lower-cased names.
    public var headers: [String: String]
    public var body: Data
    public var text: String { String(decoding: body, as: UTF8.self) }

    public init(status: Int, headers: [String: String], body: Data) {
        (self.status, self.headers, self.body) = (status, headers, body)
    }
}
