import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches a stream's playlists (as text) and segment heads over HTTP(S), never from
/// a cache (a live playlist changes under the same URL; and a conditional GET would
/// not do either: nginx's validators are the file's mtime in whole seconds and its
/// size, so a playlist rewritten within the second with a full window answers 304).
enum HLSFetcher {
    static func fetch(_ url: URL, timeout: Duration = .seconds(10),
                      session: URLSession = .shared) async throws(HLSError) -> String {
        let data = try await data(url, timeout: timeout, session: session)
        guard let text = String(data: data, encoding: .utf8) else {
            throw .notHLS("the server sent \(data.count) bytes that are not text")
        }
        return text
    }

    /// The body, or its first `firstBytes` when given (a server that ignores the range
    /// sends all of it; only that many are kept).
    static func data(_ url: URL, firstBytes: Int? = nil, timeout: Duration = .seconds(10),
                     session: URLSession = .shared) async throws(HLSError) -> Data {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout.seconds)
        request.setValue("castline", forHTTPHeaderField: "User-Agent")
        if let firstBytes { request.setValue("bytes=0-\(firstBytes - 1)", forHTTPHeaderField: "Range") }
        let data: Data
        let response: URLResponse
        do {
            (data, response) = try await session.data(for: request)
        } catch {
            throw .network(error.localizedDescription)
        }
        if let http = response as? HTTPURLResponse, !(200..<300).contains(http.statusCode) {
            throw .http(status: http.statusCode, url: url.absoluteString)
        }
        return firstBytes.map { data.prefix($0) } ?? data
    }
}
