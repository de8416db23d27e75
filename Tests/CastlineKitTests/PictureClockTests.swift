import Testing
@testable import CastlineKit

/// The picture clock's geometry: what is stamped reads back at every size a broadcast or a
/// re-encode makes, and at 720p it lies on x264's 16 px macroblocks (what keeps it cheap).
@Suite("the picture clock and the flash square")
struct PictureClockTests {
    static let sizes = [(1280, 720), (1920, 1080), (640, 360), (854, 480), (320, 240), (100, 56)]

    @Test("a stamped code reads back, at every size", arguments: sizes)
    func stampedCodeReadsBack(size: (Int, Int)) throws {
        let (width, height) = size
        let stride = (width + 3) & ~3
        var luma = [UInt8](repeating: 128, count: stride * height)
        let milliseconds: UInt64 = 1_795_000_000_123, frame: UInt64 = 987_654
        luma.withUnsafeMutableBytes { raw in
            PictureClock.stamp(milliseconds: milliseconds, frame: frame, into: raw, offset: 0, stride: stride, width: width, height: height)
        }
        let code = try #require(luma.withUnsafeBytes { PictureClock.read($0, offset: 0, stride: stride, width: width, height: height) })
        #expect(code.milliseconds == milliseconds && code.frame == frame)
    }

    @Test("no stripe, no code: a flat picture reads as none")
    func flatPictureHasNoCode() {
        let luma = [UInt8](repeating: 128, count: 1280 * 720)
        #expect(luma.withUnsafeBytes { PictureClock.read($0, offset: 0, stride: 1280, width: 1280, height: 720) } == nil)
    }

    @Test("at 720p the stripe is three macroblock rows and each block one macroblock")
    func stripeOnMacroblocks() {
        let rows = PictureClock.stripeRows(height: 720)
        #expect(rows == 48 && (720 - rows) % 16 == 0)
        for index in 0..<PictureClock.blockCount {
            let (left, right) = PictureClock.slot(index, width: 1280)
            #expect(left % 16 == 0 && right - left == 16)
        }
    }

    @Test("the flash square: centred, a third of the height, on macroblocks where it can be, inside the picture",
          arguments: sizes)
    func flashSquare(size: (Int, Int)) {
        let (width, height) = size
        let square = SyncMarks.flashSquare(width: width, height: height)
        #expect(square.x >= 0 && square.y >= 0 && square.x + square.side <= width && square.y + square.side <= height)
        #expect(square.side % 2 == 0 && square.side > 0)
        if height / 3 >= 16 { #expect(square.side % 16 == 0 && square.x % 16 == 0 && square.y % 16 == 0) }
        #expect(abs(square.x + square.side / 2 - width / 2) <= 16 && abs(square.y + square.side / 2 - height / 2) <= 16)
    }
}
