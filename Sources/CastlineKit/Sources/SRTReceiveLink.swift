import Foundation
import GstKit
import Synchronization

/// libsrt's figures of an SRT source's link, read from srtsrc's `stats` once a second while it
/// plays and sent as the source's stats: the round trip, packets received and lost, the NAKs it
/// sent (SRT's asks for a packet again) and libsrt's estimate of the link's bandwidth.
final class SRTReceiveLink: Sendable {
    private let stage: String
    private let events: EventEmitter
    /// The connection's srtsrc.
    private let source = Mutex<Element?>(nil)
    private let reading = Mutex<Task<Void, Never>?>(nil)

    init(stage: String, events: EventEmitter) {
        (self.stage, self.events) = (stage, events)
    }

    deinit { stop() }

    /// Reads `source`'s (an srtsrc's) stats once a second from now on.
    func follow(_ source: Element) {
        self.source.withLock { $0 = source }
        let task = Task { [weak self] in
            while (try? await Task.sleep(for: .seconds(1))) != nil, let self {
                guard let stats = self.source.withLock({ $0 })?.structure("stats") else { continue }
                let figures = Self.figures(stats)
                if !figures.isEmpty { events.emit(.stats(StatsSample(stage: stage, stream: nil, figures: figures))) }
            }
        }
        reading.withLock { $0?.cancel(); $0 = task }
    }

    /// Stops reading; returns the reading task, ended soon (a read under way finishes first).
    @discardableResult
    func stop() -> Task<Void, Never>? {
        let task = reading.withLock { task in defer { task = nil }; task?.cancel(); return task }
        source.withLock { $0 = nil }
        return task
    }

    /// From srtsrc's stats (a caller's: one socket); none before anything was received.
    static func figures(_ stats: Structure) -> [String: Double] {
        guard let received = stats.int("packets-received"), received > 0 else { return [:] }
        var figures = [StatsFigure.packetsReceived: Double(received)]
        if let rtt = stats.double("rtt-ms") { figures[StatsFigure.roundTrip] = rtt }
        if let lost = stats.int("packets-received-lost") { figures[StatsFigure.packetsLost] = Double(lost) }
        if let naks = stats.int("packet-nack-sent") { figures[StatsFigure.nacks] = Double(naks) }
        if let bandwidth = stats.double("bandwidth-mbps") { figures[StatsFigure.linkBandwidth] = bandwidth }
        return figures
    }
}
