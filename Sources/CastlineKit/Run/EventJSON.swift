import Foundation

/// Turns run events into JSON objects, one per line (JSON Lines): what
/// `--stats-json` writes, and what the control API streams as server-sent events.
///
/// Every object has `ts` (RFC 3339 UTC with milliseconds), `event` and
/// `pipeline`; the rest depends on the event (see `fields(of:)` and the README).
public enum EventJSON {
    /// The `event` value of each kind.
    public static func name(of kind: RunEvent.Kind) -> String {
        switch kind {
        case .stateChanged: "state"
        case .notice: "notice"
        case .warning: "warning"
        case .failure: "failure"
        case .endOfStream: "end-of-stream"
        case .streamStarted: "stream-started"
        case .streamEnded: "stream-ended"
        case .renditionChanged: "rendition-changed"
        case .buffering: "buffering"
        case .status: "status"
        case .stats: "stats"
        case .stage(let event): event.name
        case .reloaded: "reloaded"
        case .reloadFailed: "reload-failed"
        }
    }

    /// The event as a JSON-ready dictionary (values are String, Int, Double or NSNull).
    public static func object(_ event: RunEvent) -> [String: Any] {
        var object: [String: Any] = [
            "ts": timestamp(event.time),
            "event": name(of: event.kind),
            "pipeline": event.pipeline,
        ]
        object.merge(fields(of: event.kind)) { current, _ in current }
        return object
    }

    /// The event's own fields. Stats figures are flattened into the object;
    /// a figure never overwrites `ts`, `event`, `pipeline`, `stage` or `stream`.
    public static func fields(of kind: RunEvent.Kind) -> [String: Any] {
        switch kind {
        case .stateChanged(let from, let to):
            return ["from": from.rawValue, "to": to.rawValue]
        case .notice(let text), .warning(let text), .failure(let text):
            return ["message": text]
        case .status(let text, let source):
            return ["message": text, "stage": source]
        case .endOfStream, .streamStarted:
            return [:]
        case .streamEnded(let reason):
            return ["reason": reason]
        case .renditionChanged(let rendition):
            return ["rendition": rendition]
        case .buffering(let percent):
            return ["percent": percent]
        case .stats(let sample):
            var fields: [String: Any] = ["stage": sample.stage, "stream": sample.stream?.rawValue ?? NSNull()]
            for (key, value) in sample.figures where fields[key] == nil && !reserved.contains(key) {
                // JSON has no NaN or infinity: a figure that is not finite is left out.
                if value.isFinite { fields[key] = value }
            }
            return fields
        case .stage(let event):
            var fields: [String: Any] = ["stage": event.stage]
            if let stream = event.stream { fields["stream"] = stream.rawValue }
            for (key, value) in event.fields where value.isFinite && !reserved.contains(key) { fields[key] = value }
            for (key, value) in event.labels where fields[key] == nil && !reserved.contains(key) { fields[key] = value }
            return fields
        case .reloaded(let changes, let took):
            return ["changes": changes.joined(separator: ", "), "took_s": took.seconds]
        case .reloadFailed(let origin, let errors):
            return ["origin": origin, "message": errors.joined(separator: "; ")]
        }
    }

    public static let reserved: Set<String> = ["ts", "event", "pipeline", "stage", "stream"]

    /// One line of JSON, without the newline. Keys are sorted so lines diff well.
    public static func line(_ event: RunEvent) -> String {
        let object = object(event)
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]),
              let text = String(data: data, encoding: .utf8) else {
            // Only reachable if a value were not JSON-encodable; say so rather than write nothing.
            return #"{"event":"notice","message":"unencodable event"}"#
        }
        return text
    }

    /// RFC 3339 in UTC with milliseconds, e.g. `2026-11-21T20:01:02.345Z`.
    public static func timestamp(_ date: Date) -> String {
        date.formatted(Self.style)
    }

    private static let style = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)
}

/// The names of stats figures other components report, so producers and
/// outputs agree on them. A figure's unit is in its name.
public enum StatsFigure {
    /// Reconnects of an RTMP publish so far (stage: the rtmp sink's name, `rtmp0` by default).
    public static let reconnects = "reconnects"
    /// Bytes the RTMP server acknowledged (stage: the rtmp sink's name, `rtmp0` by default).
    public static let ackedBytes = "acked_bytes"
    /// ACK packets an SRT receiver sent back: its word that the data reaches it.
    public static let acksReceived = "acks_received"
    public static let sentBytes = "sent_bytes"
    public static let bitrate = "bitrate_kbps"
    /// Where what is heard now lies in the stream, in its own time (see `StreamTimeQuery`).
    public static let position = "position_s"
    /// Seconds a publish's far end had the stream (stage: the sink's name).
    public static let publishedTime = "published_s"
    /// An HLS source's figures: download throughput, the last segment's fetch time,
    /// media fetched ahead of what left the source, and wall clock minus the
    /// `EXT-X-PROGRAM-DATE-TIME` of what leaves it now.
    public static let downloadBitrate = "download_kbps"
    public static let segmentFetch = "segment_fetch_s"
    /// Seconds of media the last segment held per second its fetch took: under 1, slower than real time.
    public static let fetchSpeed = "fetch_speed"
    public static let hlsBuffered = "hls_buffered_s"
    public static let latency = "latency_s"
    /// Seconds a live HLS playlist's next segment has been overdue (absent while media comes).
    public static let waitingForMedia = "waiting_for_media_s"
    /// A publish's link as its protocol reports it: round-trip time and packets lost (WebRTC's
    /// receiver reports, libsrt's figures); SRT's packets sent again; WebRTC's receiver's asks:
    /// NACKs (a packet again) and PLIs (a keyframe).
    public static let roundTrip = "rtt_ms"
    public static let packetsLost = "packets_lost"
    public static let retransmitted = "packets_retransmitted"
    public static let nacks = "nack_count"
    /// libsrt's estimate of an SRT link's bandwidth, in Mbit/s.
    public static let linkBandwidth = "bandwidth_mbps"
    public static let plis = "pli_count"
    /// A WebRTC player's side of its link (stage: the whep source's name): RTP packets received,
    /// and the interarrival jitter (RFC 3550) of its most jittery stream; the packets lost, NACKs
    /// and PLIs above are then what it missed and asked for.
    public static let packetsReceived = "packets_received"
    public static let rtpJitter = "rtp_jitter_ms"
    /// A WebRTC connection's candidate pair: 1 when this end goes through a TURN relay.
    public static let iceRelayed = "ice_relayed"
}
