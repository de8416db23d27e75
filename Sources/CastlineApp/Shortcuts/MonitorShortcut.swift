import CastlineKit
import Foundation
import StagePlugins

/// `castline monitor`'s flags: one headless listen per URL, nothing played, each measured by a
/// stats stage and watched by an alarms stage (which decodes only what its checks read).
public struct MonitorShortcut: Sendable {
    public var urls: [String]
    /// The alarms stage's options (`--alarms FILE`); its defaults otherwise.
    public var alarms = OptionValues()
    public var audioOnly = false
    public var endAfter = Duration.seconds(30)
    public var stats = StatsSettings()

    public init(urls: [String]) {
        self.urls = urls
    }

    /// Each URL's listen, named after the stream (`test.m3u8` → `test`), each name once.
    public var listens: [ListenShortcut] {
        var taken: Set<String> = []
        return zip(urls, Self.names(of: urls)).map { url, base in
            var name = base, count = 1
            while taken.contains(name) {
                count += 1
                name = "\(base)-\(count)"
            }
            taken.insert(name)
            var listen = ListenShortcut(url: url)
            listen.name = name
            (listen.output, listen.audioOnly, listen.endAfter, listen.stats) = (.null, audioOnly, endAfter, stats)
            listen.figuresWatched = true
            listen.alarms = alarms
            return listen
        }
    }

    public func validate() throws(SettingsError) {
        guard !urls.isEmpty else { throw SettingsError("give the URL of a stream to monitor (HLS, rtmp:// or srt://)") }
        for listen in listens { try listen.validate() }
    }

    /// Each stream's name as its URL gives it: an HLS playlist's file name without the extension,
    /// after as many of its folders as tell it from the others' (`a/index.m3u8` and `b/index.m3u8`:
    /// `a-index`, `b-index`); an RTMP or SRT stream's host (the last part of its path may be the
    /// stream key). Names still alike are numbered by `listens`.
    static func names(of urls: [String]) -> [String] {
        let parts = urls.map(Self.parts)
        let hosts = urls.map { URL(string: $0)?.host }
        return parts.enumerated().map { index, own in
            // Folders tell apart other paths; the same path on another host (a backup CDN) is told by its host.
            let others = parts.indices.filter { $0 != index && parts[$0] != own }
            var depth = 1
            while depth < own.count, others.contains(where: { parts[$0].prefix(depth) == own.prefix(depth) }) {
                depth += 1
            }
            var name = own.prefix(depth).reversed().joined(separator: "-")
            if let host = hosts[index], parts.indices.contains(where: { $0 != index && parts[$0] == own && hosts[$0] != host }) {
                name = "\(host)-\(name)"
            }
            return String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
        }
    }

    /// What a stream's name is made of, nearest first: a playlist's file name (no extension) and
    /// its folders; or the host alone.
    private static func parts(of url: String) -> [String] {
        let parsed = URL(string: url)
        let web = ["http", "https"].contains(parsed?.scheme?.lowercased() ?? "")
        let path = web ? (parsed?.pathComponents ?? []).filter { $0 != "/" } : []
        guard let file = path.last.map({ ($0 as NSString).deletingPathExtension }), !file.isEmpty else { return [parsed?.host ?? "stream"] }
        return [file] + path.dropLast().reversed()
    }
}
