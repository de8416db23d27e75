@testable import StagePlugins
import Testing

@Suite("History buffer: capacity, eviction, available delay")
struct CapacityTests {
    @Test("max 10 s after 25 s of 20 ms audio: 10 s available, bytes = held units' bytes")
    func evictsToMax() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        for sequence in 0..<1250 { appendAudio(buffer, sequence) }
        #expect(buffer.newest == 1249 * audioStep)
        #expect(buffer.available == .seconds(10))
        // Held: the unit at newest - 10 s (so a 10 s seek finds it) through the newest.
        #expect(buffer.unitCount == 501)
        #expect(buffer.byteCount == 501 * 100)
        #expect(buffer.oldestHeld(stream: 0)?.pts == 749 * audioStep)
    }

    @Test("available grows from 0 with the history, then stays at max")
    func availableGrows() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(2))
        #expect(buffer.available == .zero)
        #expect(buffer.newest == nil)
        for sequence in 0..<300 {
            appendAudio(buffer, sequence)
            let expected = min(UInt64(sequence) * audioStep, 2 * second)
            #expect(buffer.available.nanoseconds == expected)
        }
        #expect(buffer.unitCount == 101)
    }

    @Test("video eviction keeps a keyframe first; available is limited by the oldest keyframe")
    func evictionRespectsKeyframes() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(5))
        // GOP 2 s: keyframe every 50 frames of 40 ms.
        for sequence in 0..<750 {
            appendVideo(buffer, sequence)
            let oldest = buffer.oldestHeld(stream: 1)
            #expect(oldest?.isKeyframe == true)
            #expect(oldest?.pts == 0 || (oldest?.pts ?? 0) % (2 * second) == 0)
            // Held span: at least max (once there is that much), at most max + one GOP.
            let newest = UInt64(sequence) * videoStep
            let span = newest - (oldest?.pts ?? 0)
            #expect(span >= min(newest, 5 * second) && span < 7 * second)
            #expect(buffer.available.nanoseconds == min(span, 5 * second))
        }
    }

    @Test("leading video frames before the first keyframe are dropped once old; none counts as a start")
    func leadingNonKeyframes() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(1))
        for sequence in 10..<30 { appendVideo(buffer, sequence, gop: 25) }  // keyframe at 25 only
        #expect(buffer.available == .milliseconds(160))  // 25 -> 29
        for sequence in 30..<60 { appendVideo(buffer, sequence, gop: 25) }
        #expect(buffer.oldestHeld(stream: 1)?.pts == 25 * videoStep)
        #expect(buffer.oldestHeld(stream: 1)?.isKeyframe == true)
    }

    @Test("a unit earlier than its stream's newest is refused and not counted")
    func refusesBackwards() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        appendAudio(buffer, 5)
        let early = MediaUnit(stream: 0, pts: 0, payload: Tag(stream: 0, sequence: 0))
        #expect(!buffer.append(early, byteSize: 100))
        #expect(buffer.unitCount == 1)
        #expect(buffer.byteCount == 100)
    }

    @Test("keyframe lookup: at or before a pts, per stream")
    func keyframeLookup() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(60))
        appendInterleaved(buffer, until: 10 * second, gop: 50)
        #expect(buffer.keyframe(atOrBefore: 0, stream: 1) == 0)
        #expect(buffer.keyframe(atOrBefore: 1_999 * millisecond, stream: 1) == 0)
        #expect(buffer.keyframe(atOrBefore: 2 * second, stream: 1) == 2 * second)
        #expect(buffer.keyframe(atOrBefore: 7_500 * millisecond, stream: 1) == 6 * second)
        #expect(buffer.keyframe(atOrBefore: 60 * second, stream: 1) == 8 * second)
        // Audio: every unit is a keyframe.
        #expect(buffer.keyframe(atOrBefore: 7_510 * millisecond, stream: 0) == 7_500 * millisecond)
        #expect(buffer.keyframe(atOrBefore: 1, stream: 7) == nil)
        let late = HistoryBuffer<Tag>(maxDuration: .seconds(60))
        appendAudio(late, 10)
        #expect(late.keyframe(atOrBefore: 100 * millisecond, stream: 0) == nil)
    }
}

@Suite("History buffer: play-out cursor")
struct CursorTests {
    @Test("delay d hands out exactly the units with pts <= newest - d, each once, in order")
    func handsOutBehindNewest() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        for sequence in 0..<250 { appendAudio(buffer, sequence) }
        var cursor = buffer.cursor(delay: .seconds(3))
        #expect(cursor.delay == .seconds(3))
        #expect(cursor.position == 99 * audioStep)  // 4.98 s - 3 s
        #expect(buffer.due(&cursor).isEmpty)
        var handedOut: [Int] = []
        for sequence in 250..<1000 {
            appendAudio(buffer, sequence)
            let units = buffer.due(&cursor)
            #expect(units.count == 1)
            #expect(units.last?.pts == (buffer.newest ?? 0) - 3 * second)
            handedOut += units.map(\.payload.sequence)
        }
        #expect(handedOut == Array(100..<850))
    }

    @Test("delay 0 hands out every unit as it arrives")
    func delayZero() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        var cursor = buffer.cursor(delay: .zero)
        #expect(cursor.position == nil)
        for sequence in 0..<600 {
            appendAudio(buffer, sequence)
            if sequence % 50 == 0 { appendVideo(buffer, sequence / 2) }  // same pts as this audio unit
            let units = buffer.due(&cursor)
            #expect(units.map(\.payload) == [Tag(stream: 0, sequence: sequence)]
                    + (sequence % 50 == 0 ? [Tag(stream: 1, sequence: sequence / 2)] : []))
        }
    }

    @Test("audio and video merge in pts order; at equal pts the lower stream first")
    func mergeOrder() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(30))
        // A cursor made before any media starts from the very first unit.
        var cursor = buffer.cursor(delay: .zero)
        // Video first and offset 5 ms, so arrival order differs from pts order.
        for sequence in 0..<100 { appendVideo(buffer, sequence, gop: 25, offset: 5 * millisecond) }
        for sequence in 0..<200 { appendAudio(buffer, sequence) }
        let units = buffer.due(&cursor)
        #expect(units.count == 300)
        #expect(zip(units, units.dropFirst()).allSatisfy { $0.pts < $1.pts })
        #expect(units.prefix(4).map(\.pts) == [0, 5 * millisecond, 20 * millisecond, 40 * millisecond])
        let tied = HistoryBuffer<Tag>(maxDuration: .seconds(30))
        appendVideo(tied, 0)
        appendAudio(tied, 0)
        var fromStart = tied.cursor(delay: .zero)
        #expect(tied.due(&fromStart).isEmpty)  // both at the position already
        appendVideo(tied, 1)
        appendAudio(tied, 1)
        appendAudio(tied, 2)
        #expect(tied.due(&fromStart).map(\.stream) == [0, 0, 1])  // 20 ms, 40 ms audio, 40 ms video
    }

    @Test("seek back 1 s re-plays the last second exactly once, then continues")
    func seekBack() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        for sequence in 0..<300 { appendAudio(buffer, sequence) }
        var cursor = buffer.cursor(delay: .seconds(2))
        var played: [Int] = []
        for sequence in 300..<400 { appendAudio(buffer, sequence); played += buffer.due(&cursor).map(\.payload.sequence) }
        let result = buffer.seek(&cursor, toDelay: .seconds(3))
        #expect(result.applied == .seconds(3))
        #expect(result.available == .seconds(7_980) / 1000)
        for sequence in 400..<500 { appendAudio(buffer, sequence); played += buffer.due(&cursor).map(\.payload.sequence) }
        // Before: 200...299. After the jump: the last second (250...299) again, then on.
        #expect(played == Array(200..<300) + Array(250..<350))
    }

    @Test("seek forward skips exactly the span, with nothing handed out twice")
    func seekForward() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(10))
        for sequence in 0..<300 { appendAudio(buffer, sequence) }
        var cursor = buffer.cursor(delay: .seconds(3))
        var played: [Int] = []
        for sequence in 300..<400 { appendAudio(buffer, sequence); played += buffer.due(&cursor).map(\.payload.sequence) }
        let result = buffer.seek(&cursor, toDelay: .seconds(2))
        #expect(result.applied == .seconds(2))
        #expect(buffer.due(&cursor).isEmpty)
        for sequence in 400..<450 { appendAudio(buffer, sequence); played += buffer.due(&cursor).map(\.payload.sequence) }
        #expect(played == Array(150..<250) + Array(300..<350))
    }

    @Test("video seek restarts at the keyframe at or before the target, audio just after it")
    func videoSeekLandsOnKeyframe() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(20))
        appendInterleaved(buffer, until: 15 * second, gop: 50)  // newest 14.98 s, keyframes every 2 s
        var cursor = buffer.cursor(delay: .zero)
        _ = buffer.due(&cursor)
        buffer.seek(&cursor, toDelay: .milliseconds(6_500))  // target 8.48 s: in the GOP from 8 s
        let target = cursor.position ?? 0
        #expect(target == 8_480 * millisecond)
        #expect(buffer.keyframe(atOrBefore: target, stream: 1) == 8 * second)
        let preroll = buffer.due(&cursor)
        // Only video 8.00...8.48 s (decode-only preroll, pts <= position); no audio yet.
        #expect(preroll.first?.isKeyframe == true)
        #expect(preroll.first?.pts == 8 * second)
        #expect(preroll.allSatisfy { $0.stream == 1 && $0.pts <= target })
        #expect(preroll.count == 13)
        appendInterleaved(buffer, from: 15 * second, until: 15_040 * millisecond)
        let next = buffer.due(&cursor)
        #expect(next.map(\.pts) == [8_500 * millisecond, 8_520 * millisecond, 8_520 * millisecond])
        #expect(next.map(\.stream) == [0, 0, 1])
        // A target right before a keyframe starts video at that keyframe: no GOP to decode in vain.
        buffer.seek(&cursor, toDelay: .milliseconds(7_040))  // newest 15.02 s: target 7.98 s
        #expect(buffer.due(&cursor).isEmpty)
        appendInterleaved(buffer, from: 15_040 * millisecond, until: 15_060 * millisecond)
        #expect(buffer.due(&cursor).map(\.pts) == [8 * second, 8 * second])
    }

    @Test("a request beyond the history is clamped and says what was available")
    func clamps() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(60))
        for sequence in 0..<200 { appendAudio(buffer, sequence) }
        var cursor = buffer.cursor(delay: .seconds(30))
        #expect(cursor.delay == .milliseconds(3_980))
        let result = buffer.seek(&cursor, toDelay: .seconds(45))
        #expect(result.applied == .milliseconds(3_980))
        #expect(result.available == .milliseconds(3_980))
        #expect(buffer.seek(&cursor, toDelay: .seconds(-1)).applied == .zero)
        let empty = HistoryBuffer<Tag>(maxDuration: .seconds(60))
        var early = empty.cursor(delay: .seconds(5))
        #expect(early.delay == .zero)
        #expect(empty.seek(&early, toDelay: .seconds(1)) == (applied: .zero, available: .zero))
    }

    @Test("what a cursor has still to play is kept up to 10 s past the max; left further behind, it continues from the oldest held unit")
    func fallsBehind() {
        let buffer = HistoryBuffer<Tag>(maxDuration: .seconds(1))
        for sequence in 0..<100 { appendAudio(buffer, sequence) }
        var cursor = buffer.cursor(delay: .seconds(1))
        for sequence in 100..<400 { appendAudio(buffer, sequence) }  // 6 s with no play-out
        // Nothing it had still to play went: it goes on where it was (units of 20 ms; 1 s behind the newest).
        let kept = buffer.due(&cursor)
        #expect(kept.first?.payload.sequence == 50 && kept.last?.payload.sequence == 349 && kept.count == 300)
        for sequence in 400..<1_400 { appendAudio(buffer, sequence) }  // 20 s more
        // The newest is at 27.98 s: kept from 1 s + 10 s back, 16.98 s (unit 849); due up to 26.98 s (unit 1349).
        let behind = buffer.due(&cursor)
        #expect(behind.first?.payload.sequence == 849 && behind.last?.payload.sequence == 1_349 && behind.count == 501)
    }
}
