// libFuzzer entry point for the MPEG-TS readers that see segment bytes off the network
// (TransportStreamFilter, TransportStreamHead): any bytes, in chunks of any size, must give
// whole packets or nothing, never a trap, an out-of-bounds read or a hang. Built and run by
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
    return 0
}
