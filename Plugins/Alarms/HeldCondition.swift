import CastlineKit
import Foundation

/// One alarm's raise and clear, in media time: raised once its fault has lasted the hold time
/// (from when the fault began), cleared once the fault has been gone `clearAfter`. Each fault
/// raises once and clears once.
struct HeldCondition: Sendable {
    let kind: AlarmKind
    /// Its threshold and times: a figure check may set them as it judges (see `FigureAlarms`).
    var check: AlarmCheck
    /// The stream it judges, when a figure check judges one.
    var stream: StreamKind?
    /// When the fault now running began (media seconds), and the worst value seen in it.
    private(set) var faultBegan: Double?
    private(set) var worst: Double?
    /// While raised: when the fault was last seen gone.
    private var goneSince: Double?
    private(set) var raised = false

    init(kind: AlarmKind, check: AlarmCheck, stream: StreamKind? = nil) {
        self.kind = kind
        self.check = check
        self.stream = stream
    }

    /// What `[start, end)` of the media says: faulty or not, its value. `began`: where a fault
    /// that shows only now began (a frozen picture began with the frame that stopped changing);
    /// `ended`: where a fault now gone ended, when that is known (else at `start`).
    mutating func update(faulty: Bool, value: Double, from start: Double, to end: Double, began: Double? = nil,
                         ended: Double? = nil, worse: (Double, Double) -> Bool) -> AlarmChange? {
        if faulty {
            goneSince = nil
            if faultBegan == nil { faultBegan = began ?? start }
            worst = worst.map { worse(value, $0) ? value : $0 } ?? value
            guard !raised, let since = faultBegan, end - since >= check.hold else { return nil }
            raised = true
            return AlarmChange(kind: kind, stream: stream, edge: .raised, value: worst ?? value, threshold: check.threshold, since: since, at: end,
                               hold: check.hold)
        }
        guard raised else {
            faultBegan = nil
            worst = nil
            return nil
        }
        // Never before the fault began (the wall clock a figure check goes by can step back).
        let gone = goneSince ?? ended.map { max($0, faultBegan ?? $0) } ?? start
        goneSince = gone
        guard end - gone >= check.clearAfter, let since = faultBegan else { return nil }
        defer {
            raised = false
            faultBegan = nil
            worst = nil
            goneSince = nil
        }
        var cleared = AlarmChange(kind: kind, stream: stream, edge: .cleared, value: worst ?? value, threshold: check.threshold, since: since,
                                  at: gone)
        cleared.judged = end
        return cleared
    }
}

/// An alarm raised or cleared, in media time (seconds of the stream).
struct AlarmChange: Sendable, Equatable {
    enum Edge: String, Sendable { case raised, cleared }
    let kind: AlarmKind
    /// The stream a figure check judged (a bitrate's); media checks have their kind's.
    var stream: StreamKind? = nil
    let edge: Edge
    /// The worst value of the fault so far (the lowest level, the highest loudness...).
    let value: Double
    let threshold: Double
    /// Where the fault began.
    let since: Double
    /// Where the alarm was raised (the hold passed) or the fault ended.
    let at: Double
    /// The hold the fault lasted before it was raised (a raise's).
    var hold: Double? = nil
    /// Where in the media it was judged (a clear is judged `clearAfter` past where the fault ended).
    var judged: Double?

    /// Where the fault began on the wall clock, told `now` as the media where it was judged plays.
    func wallSince(now: Date) -> Date { now.addingTimeInterval(since - (judged ?? at)) }
}
