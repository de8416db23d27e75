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
        var taken: [String: Int] = [:]
        return urls.map { url in
            let base = Self.name(of: url)
            taken[base, default: 0] += 1
            var listen = ListenShortcut(url: url)
            listen.name = taken[base] == 1 ? base : "\(base)-\(taken[base] ?? 0)"
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

    /// A stream's name as the URL gives it: an HLS playlist's file name without the extension;
    /// an RTMP or SRT stream's host (the last part of its path may be the stream key).
    static func name(of url: String) -> String {
        let parsed = URL(string: url)
        let web = ["http", "https"].contains(parsed?.scheme?.lowercased() ?? "")
        let last = web ? parsed.map { ($0.lastPathComponent as NSString).deletingPathExtension } ?? "" : ""
        let name = last.isEmpty || last == "/" ? (parsed?.host ?? "stream") : last
        return String(name.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
    }
}
