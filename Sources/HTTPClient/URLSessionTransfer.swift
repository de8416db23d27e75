import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

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
        /// The server ignored the range and sends the whole body: what of it to keep.
        var cut: RangeCut?
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
        state.withLock { $0.cut = RangeCut(range) }
    }

    /// Passes a chunk on; true once the range wanted has all come (the rest is not wanted).
    @discardableResult
    func yield(_ data: Data) -> Bool {
        let (kept, complete) = state.withLock { state -> (Data, Bool) in
            state.lastActivity = .now
            return state.cut?.cut(data) ?? (data, false)
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
        if let error = error as? URLError, error.code == .cannotFindHost {
            transfer.finish(throwing: FetchError.hostNotFound(url: transfer.url.absoluteString))
        } else if let error = error as? URLError, error.code == .cannotConnectToHost {
            transfer.finish(throwing: FetchError.refused(url: transfer.url.absoluteString))
        } else if let error {
            transfer.finish(throwing: FetchError.network(error.localizedDescription, url: transfer.url.absoluteString))
        } else {
            transfer.finish()
        }
    }
}
