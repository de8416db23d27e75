import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Fetches playlist text over HTTP(S), never from a cache (a live playlist changes
/// under the same URL; and a conditional GET would not do either: nginx's validators
/// are the file's mtime in whole seconds and its size, so a playlist rewritten within
/// the second with a full window answers 304).
enum PlaylistFetcher {
    static func fetch(_ url: URL, timeout: Duration = .seconds(10),
                      session: URLSession = .shared) async throws(HLSError) -> String {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout.seconds)
        request.setValue("castline", forHTTPHeaderField: "User-Agent")
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
        guard let text = String(data: data, encoding: .utf8) else {
            throw .notHLS("the server sent \(data.count) bytes that are not text")
        }
        return text
    }
}
