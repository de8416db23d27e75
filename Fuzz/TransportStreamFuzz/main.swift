// libFuzzer entry point for the readers that see segment bytes off the network
// (TransportStreamFilter, TransportStreamHead, and PackedAudio's sniffing and ID3 tags): any
// bytes, in chunks of any size, must give whole packets or nothing, never a trap, an
// out-of-bounds read or a hang. Built and run by
// Fuzz/run.sh, compiled into one module with their sources (hence no `import HLS`).
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func transportStreamFuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    guard let first = data.first else { return 0 }
    // The first byte picks the chunk size the bytes arrive in: 1 to 4096.
    let chunk = 1 + Int(first) * 16
    var filter = TransportStreamFilter(keeping: [.audio])
    var kept = Data()
    var at = data.startIndex + 1
    while at < data.endIndex {
        let end = min(at + chunk, data.endIndex)
        kept.append(filter.filter(data[at..<end]))
        at = end
    }
    precondition(kept.count % 188 == 0, "the filter let a part of a packet through")
    _ = TransportStreamHead.read([UInt8](data.dropFirst()))
    _ = TransportStreamHead.read([UInt8](kept))
    let bytes = [UInt8](data.dropFirst())
    _ = PackedAudio.sniff(bytes)
    // Read as the bytes arrive, chunk by chunk; a whole tag never claims more than there is.
    for length in stride(from: 0, through: bytes.count, by: chunk) {
        if case .whole(let size, _) = PackedAudio.tag(Array(bytes.prefix(length))) {
            precondition(size <= length, "a tag longer than its bytes")
        }
    }
    return 0
}
