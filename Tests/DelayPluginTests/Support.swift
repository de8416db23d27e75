@testable import StagePlugins
import Testing

/// Test payload: which unit this was, so hand-outs can be checked one by one.
struct Tag: Sendable, Equatable {
    var stream: Int
    var sequence: Int
}

let millisecond: UInt64 = 1_000_000
let second: UInt64 = 1_000_000_000
let audioStep: UInt64 = 20 * millisecond
let videoStep: UInt64 = 40 * millisecond

/// Audio unit `sequence` of 20 ms on stream 0, 100 bytes.
func appendAudio(_ buffer: HistoryBuffer<Tag>, _ sequence: Int, offset: UInt64 = 0) {
    let unit = MediaUnit(stream: 0, pts: offset + UInt64(sequence) * audioStep, duration: audioStep,
                         isKeyframe: true, payload: Tag(stream: 0, sequence: sequence))
    #expect(buffer.append(unit, byteSize: 100))
}

/// Video frame `sequence` of 40 ms on stream 1, a keyframe every `gop` frames; keyframes 1000 bytes, others 200.
func appendVideo(_ buffer: HistoryBuffer<Tag>, _ sequence: Int, gop: Int = 50, offset: UInt64 = 0) {
    let isKeyframe = sequence % gop == 0
    let unit = MediaUnit(stream: 1, pts: offset + UInt64(sequence) * videoStep, duration: videoStep,
                         isKeyframe: isKeyframe, payload: Tag(stream: 1, sequence: sequence))
    #expect(buffer.append(unit, byteSize: isKeyframe ? 1000 : 200))
}

/// Appends audio and video in pts order (as a muxer would deliver them) up to `until` (exclusive).
func appendInterleaved(_ buffer: HistoryBuffer<Tag>, from start: UInt64 = 0, until end: UInt64, gop: Int = 50) {
    var time = start
    while time < end {
        if time % videoStep == 0 { appendVideo(buffer, Int(time / videoStep), gop: gop) }
        appendAudio(buffer, Int(time / audioStep))
        time += audioStep
    }
}

extension Duration {
    var nanoseconds: UInt64 {
        let (seconds, attoseconds) = components
        return UInt64(seconds) * second + UInt64(attoseconds / 1_000_000_000)
    }
}
