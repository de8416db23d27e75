import Foundation

/// The test signal's machine-readable clock, in the picture: a stripe along the bottom of
/// each frame of large black and white blocks that carries the wall-clock time the frame was
/// made (UTC, ms) and its number, with a checksum. Blocks are a fixed part of the frame's width
/// and the stripe a fixed part of its height, so the code reads back from decoded pixels after
/// lossy compression and scaling (8 px a block at 640 wide). At 720p each block is one
/// macroblock wide and the stripe three macroblocks high: a block that changes is a flat
/// change to x264 (blocks astride macroblocks made the stripe add 11 % to a broadcast's CPU;
/// on them, 7 %).
///
/// Block order: a white and a black guard (the reader's levels), 44 bits of milliseconds since
/// 1970, 20 bits of frame number, an 8-bit CRC of the 64 bits; most significant bit first.
public enum PictureClock {
    static let millisecondBits = 44
    static let frameBits = 20
    static let checkBits = 8
    public static let blockCount = 2 + millisecondBits + frameBits + checkBits
    /// The stripe is cut into this many equal slots (16 px at 1280 wide), the code in the
    /// first `blockCount`, black after.
    static let slots = 80
    /// The stripe's height: a fifteenth of the frame (48 rows at 720p, from row 672; 24 at 360p).
    public static func stripeRows(height: Int) -> Int { max(4, height / 15) & ~1 }

    /// Where slot `index` starts and ends along a line `width` wide.
    static func slot(_ index: Int, width: Int) -> (left: Int, right: Int) {
        (index * width / slots, (index + 1) * width / slots)
    }

    /// The code's blocks, guards first: true is white.
    public static func blocks(milliseconds: UInt64, frame: UInt64) -> [Bool] {
        let payload = (milliseconds & (1 << millisecondBits - 1)) << frameBits | (frame & (1 << frameBits - 1))
        let check = UInt64(crc8(payload))
        var blocks = [true, false]
        for bit in stride(from: 63, through: 0, by: -1) { blocks.append(payload >> UInt64(bit) & 1 == 1) }
        for bit in stride(from: 7, through: 0, by: -1) { blocks.append(check >> UInt64(bit) & 1 == 1) }
        return blocks
    }

    /// Writes the code into a luma plane (video range: 16 black, 235 white).
    public static func stamp(milliseconds: UInt64, frame: UInt64, into luma: UnsafeMutableRawBufferPointer,
                             offset: Int, stride: Int, width: Int, height: Int) {
        let rows = stripeRows(height: height)
        guard width >= slots, height > rows, offset + stride * height <= luma.count, let base = luma.baseAddress
        else { return }
        let blocks = blocks(milliseconds: milliseconds, frame: frame)
        let codeEnd = slot(blockCount - 1, width: width).right
        for row in (height - rows)..<height {
            let line = base + offset + row * stride
            for (index, white) in blocks.enumerated() {
                let (left, right) = slot(index, width: width)
                memset(line + left, white ? 235 : 16, right - left)
            }
            memset(line + codeEnd, 16, width - codeEnd)
        }
    }

    /// Reads the code back from a luma plane: the milliseconds and frame number, or nil when
    /// there is no code there or it does not check.
    public static func read(_ luma: UnsafeRawBufferPointer, offset: Int, stride: Int, width: Int, height: Int)
        -> (milliseconds: UInt64, frame: UInt64)? {
        let rows = stripeRows(height: height)
        guard width >= slots, height > rows, offset + stride * height <= luma.count, let base = luma.baseAddress
        else { return nil }
        // The middle half of each block, both ways: edges blur in compression and scaling.
        let top = height - rows + rows / 4, bottom = height - rows / 4
        func level(_ index: Int) -> Int {
            let (left, right) = slot(index, width: width)
            let from = left + (right - left) / 4, to = max(from + 1, right - (right - left) / 4)
            var sum = 0
            for row in Swift.stride(from: top, to: bottom, by: max(1, (bottom - top) / 4)) {
                let line = base.advanced(by: offset + row * stride).assumingMemoryBound(to: UInt8.self)
                for column in from..<to { sum += Int(line[column]) }
            }
            return sum
        }
        let white = level(0), black = level(1)
        // No stripe there (or a picture too flat to carry one).
        guard white > black, white - black > (white + black) / 4 else { return nil }
        let threshold = (white + black) / 2
        var payload: UInt64 = 0
        for index in 2..<(2 + 64) { payload = payload << 1 | (level(index) > threshold ? 1 : 0) }
        var check: UInt64 = 0
        for index in (2 + 64)..<blockCount { check = check << 1 | (level(index) > threshold ? 1 : 0) }
        guard UInt64(crc8(payload)) == check else { return nil }
        return (payload >> UInt64(frameBits), payload & (1 << frameBits - 1))
    }

    /// CRC-8 (polynomial 0x07) of the 8 bytes, most significant first.
    static func crc8(_ value: UInt64) -> UInt8 {
        var crc: UInt8 = 0
        for shift in stride(from: 56, through: 0, by: -8) {
            crc ^= UInt8(truncatingIfNeeded: value >> UInt64(shift))
            for _ in 0..<8 { crc = crc & 0x80 != 0 ? crc << 1 ^ 0x07 : crc << 1 }
        }
        return crc
    }
}

/// The test signal's machine-readable clock, in the sound: every mark (a wall-clock second
/// by default) starts with the 100 ms beep at twice the tone's pitch, then says which mark it
/// is: 10 bits of its number (modulo 1024: 17 minutes, more than any latency) and an even
/// parity bit, 30 ms each from 120 ms on, as a tone at three (0) or four (1) times the tone's pitch.
public enum SoundClock {
    public static let beep = 0.100
    public static let codeStart = 0.120
    public static let slot = 0.030
    public static let numberBits = 10
    public static let slots = numberBits + 1
    /// Where the code ends: the reader has all it needs then.
    public static let codeEnd = codeStart + Double(slots) * slot
    /// The beep's amplitude over a tone of amplitude `volume`: about 10 dB louder, so a person
    /// hears the mark, and a reader finds it against the tone at any level.
    public static func beepLevel(volume: Double) -> Double { min(1, 3 * volume) }

    /// The code's bits for mark `number`: its low 10 bits, most significant first, then parity.
    public static func bits(_ number: Int64) -> [Bool] {
        let value = Int(number & Int64(1 << numberBits - 1))
        var bits = (0..<numberBits).reversed().map { value >> $0 & 1 == 1 }
        bits.append(bits.filter { $0 }.count % 2 == 1)
        return bits
    }

    /// What to play `phase` seconds into mark `number` (nil: the tone): the beep or a code slot,
    /// as a frequency multiple of the tone.
    /// `bits` are the mark's (`bits(number)`), made once per mark: a writer asks for every sample.
    public static func multiple(at phase: Double, bits: [Bool]) -> Double? {
        if phase < beep { return 2 }
        guard phase >= codeStart, phase < codeEnd else { return nil }
        let index = Int((phase - codeStart) / slot)
        return bits.indices.contains(index) && bits[index] ? 4 : 3
    }

    /// The mark number a reader's bits carry (low 10 bits), or nil when the parity fails.
    /// A bit the reader could not hear (nil) is the one the parity asks for: AAC encoders
    /// drop a tone for 20 to 30 ms now and then (ffmpeg's own, at 96k), which is one slot.
    public static func number(from bits: [Bool?]) -> Int? {
        guard bits.count == slots, bits.filter({ $0 == nil }).count <= 1 else { return nil }
        let ones = bits.filter { $0 == true }.count
        // With one bit unheard, the parity cannot fail: that bit makes the count even.
        let heard = bits.map { $0 ?? (ones % 2 == 1) }
        guard heard.filter({ $0 }).count % 2 == 0 else { return nil }
        return heard.prefix(numberBits).reduce(0) { $0 << 1 | ($1 ? 1 : 0) }
    }

    /// The full mark number nearest below `reference` (a mark heard at wall time `reference`
    /// began at most 1024 marks before it) whose low 10 bits are `low`.
    public static func number(low: Int, before reference: Int64) -> Int64 {
        let span = Int64(1 << numberBits)
        var candidate = reference - ((reference - Int64(low)) % span + span) % span
        if candidate > reference { candidate -= span }
        return candidate
    }
}
