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
    case cancelled

    public var description: String {
        switch self {
        case .http(let status, let url): "the server answered HTTP \(status) for \(url)"
        case .network(let why, let url): "cannot fetch \(url): \(why)"
        case .timedOut(let url, let after): "no answer from \(url) within \(after.components.seconds) s"
        case .tooManyRedirects(let url, let limit): "more than \(limit) redirects from \(url) (a redirect loop?)"
        case .tooLarge(let url, let limit): "\(url) is larger than \(limit / 1024 / 1024) MB"
        case .refused(let url): "nothing answers at \(url) (connection refused)"
        case .cancelled: "cancelled"
        }
    }

    /// Trouble that may pass (the network, the server's own errors, a timeout).
    public var isTransient: Bool {
        switch self {
        case .network, .timedOut, .refused: true
        case .http(let status, _): status >= 500 || status == 408 || status == 429
        default: false
        }
    }
}

/// castline's HTTP client: requests over one URLSession (persistent connections), bodies
/// streamed as the bytes arrive. Timeouts are enforced here, not left to URLSession: on
/// Linux its request timeout is not honoured when a server accepts and never answers.
/// Redirects are followed up to `maxRedirects`.
public final class HTTPFetcher: Sendable {
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

    /// The whole body, refused past `limit` bytes.
    public func data(_ url: URL, range: ByteRange? = nil, limit: Int = 64 * 1024 * 1024) async throws(FetchError) -> Data {
        try await Self.collect(stream(url, range: range), url: url, limit: limit)
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

/// One transfer's state: where its bytes go, when the last one came.
final class Transfer: Sendable {
    let url: URL
    let range: ByteRange?
    let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private struct State {
        /// Waiting for the reply's head, whatever its status (`send`); nil for a GET that takes 2xx only.
        var head: CheckedContinuation<HTTPURLResponse, any Error>?
        var lastActivity = ContinuousClock.now
        var finished = false
        var redirects = 0
        /// The server ignored the range and sends the whole body: bytes still to drop, and to keep.
        var skip = 0
        var take: Int?
    }

    let wantsAnyStatus: Bool
    private let state: Mutex<State>

    init(url: URL, range: ByteRange?, continuation: AsyncThrowingStream<Data, any Error>.Continuation,
         head: CheckedContinuation<HTTPURLResponse, any Error>? = nil) {
        self.url = url
        self.range = range
        self.continuation = continuation
        wantsAnyStatus = head != nil
        state = Mutex(State(head: head))
    }

    /// The reply's head came: handed to `send`'s caller.
    func headCame(_ response: HTTPURLResponse) {
        let head = state.withLock { state in
            defer { state.head = nil }
            state.lastActivity = .now
            return state.head
        }
        head?.resume(returning: response)
    }

    /// How long since the last sign of life; nil once finished.
    func quietFor() -> Duration? {
        state.withLock { $0.finished ? nil : ContinuousClock.now - $0.lastActivity }
    }

    func touch() { state.withLock { $0.lastActivity = .now } }

    /// Counts a redirect; false past the limit.
    func redirected() -> Bool {
        state.withLock { state in
            state.redirects += 1
            state.lastActivity = .now
            return state.redirects <= HTTPFetcher.maxRedirects
        }
    }

    /// The server answered a ranged request with the whole body (200): the range is cut out here.
    func wholeBodyCame() {
        guard let range else { return }
        state.withLock { state in
            state.skip = range.offset
            state.take = range.length
        }
    }

    /// Passes a chunk on; true once the range wanted has all come (the rest is not wanted).
    @discardableResult
    func yield(_ data: Data) -> Bool {
        let (kept, complete) = state.withLock { state -> (Data, Bool) in
            state.lastActivity = .now
            guard let take = state.take else { return (data, false) }
            let dropped = min(state.skip, data.count)
            state.skip -= dropped
            let kept = data.dropFirst(dropped).prefix(take)
            state.take = take - kept.count
            return (Data(kept), take - kept.count == 0)
        }
        if !kept.isEmpty { continuation.yield(kept) }
        if complete { finish() }
        return complete
    }

    func finish(throwing error: (any Error)? = nil) {
        let (first, head) = state.withLock { state in
            defer { (state.finished, state.head) = (true, nil) }
            return (!state.finished, state.head)
        }
        guard first else { return }
        head?.resume(throwing: error ?? FetchError.network("the connection ended before a reply", url: url.absoluteString))
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
    }
}

/// URLSession's one delegate, handing each task's callbacks to its transfer.
final class TaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Mutex<[Int: Transfer]>([:])
    private let followsRedirects: Bool

    init(followsRedirects: Bool) {
        self.followsRedirects = followsRedirects
    }

    func add(_ task: URLSessionTask, _ transfer: Transfer) {
        transfers.withLock { $0[task.taskIdentifier] = transfer }
    }

    func remove(_ task: URLSessionTask) {
        _ = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
    }

    private func transfer(_ task: URLSessionTask) -> Transfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
                    completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        guard let transfer = transfer(dataTask) else { return completionHandler(.cancel) }
        if transfer.wantsAnyStatus, let http = response as? HTTPURLResponse {
            transfer.headCame(http)
            return completionHandler(.allow)
        }
        if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
            transfer.finish(throwing: FetchError.http(status: http.statusCode, url: transfer.url.absoluteString))
            remove(dataTask)
            return completionHandler(.cancel)
        }
        if transfer.range != nil, (response as? HTTPURLResponse)?.statusCode == 200 { transfer.wholeBodyCame() }
        transfer.touch()
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let transfer = transfer(dataTask), transfer.yield(data) else { return }
        remove(dataTask)
        dataTask.cancel()
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        guard let transfer = transfer(task), followsRedirects else { return completionHandler(nil) }
        guard transfer.redirected() else {
            // Not followed: the redirect response is the answer, and ends the task as any other.
            transfer.finish(throwing: FetchError.tooManyRedirects(url: transfer.url.absoluteString, limit: HTTPFetcher.maxRedirects))
            return completionHandler(nil)
        }
        var next = request
        if let range = transfer.range { next.setValue(range.header, forHTTPHeaderField: "Range") }
        completionHandler(next)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let transfer = transfer(task) else { return }
        remove(task)
        if let error = error as? URLError, [.cannotConnectToHost, .cannotFindHost].contains(error.code) {
            transfer.finish(throwing: FetchError.refused(url: transfer.url.absoluteString))
        } else if let error {
            transfer.finish(throwing: FetchError.network(error.localizedDescription, url: transfer.url.absoluteString))
        } else {
            transfer.finish()
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
