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
    case cancelled

    public var description: String {
        switch self {
        case .http(let status, let url): "the server answered HTTP \(status) for \(url)"
        case .network(let why, let url): "cannot fetch \(url): \(why)"
        case .timedOut(let url, let after): "no answer from \(url) within \(after.components.seconds) s"
        case .tooManyRedirects(let url, let limit): "more than \(limit) redirects from \(url) (a redirect loop?)"
        case .tooLarge(let url, let limit): "\(url) is larger than \(limit / 1024 / 1024) MB"
        case .cancelled: "cancelled"
        }
    }

    /// Trouble that may pass (the network, the server's own errors, a timeout).
    public var isTransient: Bool {
        switch self {
        case .network, .timedOut: true
        case .http(let status, _): status >= 500 || status == 408 || status == 429
        default: false
        }
    }
}

/// HTTP GETs over one URLSession (persistent connections), streamed as the bytes
/// arrive. Timeouts are enforced here, not left to URLSession: on Linux its
/// request timeout is not honoured when a server accepts and never answers.
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

    public init(idleTimeout: Duration = HTTPFetcher.defaultIdleTimeout) {
        self.idleTimeout = idleTimeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 6
        configuration.timeoutIntervalForRequest = 3600  // ours is `idleTimeout`
        let router = TaskRouter()
        self.router = router
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: nil)
    }

    /// A session holds its delegate and connections until invalidated (a source's own fetcher goes with it).
    deinit { session.finishTasksAndInvalidate() }

    /// The body of `url` (the bytes of `range` only, when given) as chunks, as they arrive.
    public func stream(_ url: URL, range: ByteRange? = nil) -> AsyncThrowingStream<Data, any Error> {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: 3600)
        request.setValue("castline", forHTTPHeaderField: "User-Agent")
        if let range { request.setValue(range.header, forHTTPHeaderField: "Range") }
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Data.self, throwing: (any Error).self)
        let task = session.dataTask(with: request)
        let transfer = Transfer(url: url, range: range, continuation: continuation)
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
        watch(task, transfer)
        return stream
    }

    /// The whole body, refused past `limit` bytes.
    public func data(_ url: URL, range: ByteRange? = nil, limit: Int = 64 * 1024 * 1024) async throws(FetchError) -> Data {
        var body = Data()
        do {
            for try await chunk in stream(url, range: range) {
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

    /// Ends a transfer that has gone quiet for `idleTimeout`.
    private func watch(_ task: URLSessionDataTask, _ transfer: Transfer) {
        let timeout = idleTimeout
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
    private let continuation: AsyncThrowingStream<Data, any Error>.Continuation
    private struct State {
        var lastActivity = ContinuousClock.now
        var finished = false
        var redirects = 0
        /// The server ignored the range and sends the whole body: bytes still to drop, and to keep.
        var skip = 0
        var take: Int?
    }
    private let state = Mutex(State())

    init(url: URL, range: ByteRange?, continuation: AsyncThrowingStream<Data, any Error>.Continuation) {
        self.url = url
        self.range = range
        self.continuation = continuation
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
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        guard first else { return }
        if let error { continuation.finish(throwing: error) } else { continuation.finish() }
    }
}

/// URLSession's one delegate, handing each task's callbacks to its transfer.
final class TaskRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Mutex<[Int: Transfer]>([:])

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
        guard let transfer = transfer(task) else { return completionHandler(nil) }
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
        if let error {
            transfer.finish(throwing: FetchError.network(error.localizedDescription, url: transfer.url.absoluteString))
        } else {
            transfer.finish()
        }
    }
}
