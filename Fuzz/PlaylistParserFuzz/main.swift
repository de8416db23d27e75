// libFuzzer entry point for PlaylistParser: any bytes must give a Playlist or a PlaylistError,
// never a trap, an out-of-bounds read or a hang. Built and run by Fuzz/run.sh, compiled into
// one module with the parser's sources (hence no `import HLS`).
import Foundation

private let bases = [
    URL(string: "http://127.0.0.1:8080/hls/stream.m3u8")!,
    URL(string: "file:///srv/media/out.m3u8")!,
]

@_cdecl("LLVMFuzzerTestOneInput")
public func playlistParserFuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    // Both bases: URI resolution takes a different path for each.
    for base in bases {
        guard case .media(let media)? = try? PlaylistParser.parse(data, base: base) else { continue }
        // What consumers compute from a parse must not trap either.
        _ = media.duration
        _ = media.endSequence
        for segment in media.segments { _ = segment.byteRange?.header; _ = segment.initSection?.byteRange?.header }
    }
    return 0
}
