import Crypto
import _CryptoExtras
import Foundation

/// Decrypts AES-128 segments (RFC 8216 §5.2): CBC with PKCS7 padding, the
/// key fetched once per URI, the IV from the tag or else the segment's media
/// sequence number. Works chunk by chunk as the bytes arrive: every whole
/// block but the last goes out at once, the last waits for the padding.
public struct SegmentDecryptor {
    private let key: SymmetricKey
    private var iv: [UInt8]
    private var pending: [UInt8] = []

    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        case badKey(bytes: Int)
        case badPadding
        case truncated

        public var description: String {
            switch self {
            case .badKey(let bytes): "the AES-128 key is \(bytes) bytes, not 16"
            case .badPadding: "the segment did not decrypt (wrong key?)"
            case .truncated: "the encrypted segment ends mid-block"
            }
        }
    }

    public init(key: [UInt8], iv: [UInt8]) throws(Failure) {
        guard key.count == 16 else { throw .badKey(bytes: key.count) }
        self.key = SymmetricKey(data: key)
        self.iv = iv
    }

    /// The IV a segment without an `IV` attribute uses: its sequence number, big-endian, in 16 bytes.
    public static func iv(sequence: Int) -> [UInt8] {
        let value = UInt64(clamping: max(0, sequence))
        return [UInt8](repeating: 0, count: 8) + (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    /// The clear bytes of `chunk` that can be given out now.
    public mutating func update(_ chunk: Data) throws -> Data {
        pending.append(contentsOf: chunk)
        // Keep the last whole block (it may hold the padding) and any partial one.
        let ready = max(0, (pending.count - 1) / 16) * 16
        guard ready > 0 else { return Data() }
        let blocks = pending[0..<ready]
        let clear = try AES._CBC.decrypt(blocks, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true)
        iv = Array(blocks.suffix(16))
        pending.removeFirst(ready)
        return clear
    }

    /// The last clear bytes, padding removed.
    public mutating func finish() throws -> Data {
        guard !pending.isEmpty else { return Data() }
        guard pending.count == 16 else { throw Failure.truncated }
        let clear = try AES._CBC.decrypt(pending, using: key, iv: AES._CBC.IV(ivBytes: iv), noPadding: true)
        pending = []
        guard let padding = clear.last, (1...16).contains(padding),
              clear.suffix(Int(padding)).allSatisfy({ $0 == padding }) else { throw Failure.badPadding }
        return clear.prefix(clear.count - Int(padding))
    }
}
