import Foundation
import Synchronization

/// The runner's state, as a player or broadcaster UI shows it.
public enum RunState: String, Sendable, CaseIterable, CustomStringConvertible {
    case initialising, connecting, buffering, playing, paused, reconnecting, stopping, stopped, failed
    public var description: String { rawValue }
    public var isFinal: Bool { self == .stopped || self == .failed }
}

/// Everything a run reports. The CLI, the control API and tests all read these.
public struct RunEvent: Sendable {
    public enum Kind: Sendable {
        case stateChanged(from: RunState, to: RunState)
        /// A line for people: what castline is doing and why.
        case notice(String)
        case warning(String)
        /// The run cannot go on; the message names the problem and the fix.
        case failure(String)
        case endOfStream
        /// A stream source began delivering media.
        case streamStarted
        /// A stream source saw its stream end (`#EXT-X-ENDLIST`, or no new media for a while).
        case streamEnded(reason: String)
        /// An adaptive source settled on another rendition.
        case renditionChanged(String)
        case buffering(percent: Int)
        /// A one-line summary of what is flowing now, refreshed about once a second, from
        /// `source` (a publisher's component name: each destination has its own).
        case status(String, source: String)
        /// Figures a component measured (a measuring stage per stream, a source, a publish).
        case stats(StatsSample)
        /// A stage's own event (see `StageEvent`): a command applied, or what it holds changed.
        case stage(StageEvent)
        /// A new pipeline file was applied to the running pipeline: what changed
        /// (key paths, e.g. `source` or `stages[1] (added)`), and how long the swap took.
        case reloaded(changes: [String], took: Duration)
        /// A new pipeline file was refused (the running pipeline is untouched): its errors.
        case reloadFailed(origin: String, errors: [String])
    }

    public var time: Date
    public var pipeline: String
    public var kind: Kind

    public init(time: Date = Date(), pipeline: String, kind: Kind) {
        self.time = time
        self.pipeline = pipeline
        self.kind = kind
    }
}

/// Where components send events. Secrets are masked here, once, for every consumer.
public struct EventEmitter: Sendable {
    private let pipeline: String
    private let masker: SecretMasker
    private let deliver: @Sendable (RunEvent) -> Void

    public init(pipeline: String, masker: SecretMasker, deliver: @escaping @Sendable (RunEvent) -> Void) {
        self.pipeline = pipeline
        self.masker = masker
        self.deliver = deliver
    }

    public func emit(_ kind: RunEvent.Kind) {
        deliver(RunEvent(pipeline: pipeline, kind: masker.mask(kind)))
    }

    /// Masks `secret` in every event from now on (if it is long enough to be found by itself).
    public func protect(_ secret: Secret) {
        masker.add(secret)
    }

    /// Masks `text`, which holds a secret, as `masked` in every event from now on.
    public func protect(use text: String, masked: String) {
        masker.add(use: text, masked: masked)
    }

    /// An emitter that drops everything (planning, `graph`, `validate`).
    public static let discarding = EventEmitter(pipeline: "", masker: SecretMasker(secrets: [])) { _ in }
}

/// Replaces secrets in text with `****`, where they are used: each text a component
/// builds around a secret (an RTMP location, `rtmp://host/app/KEY`) is replaced by its masked
/// form, and a secret long enough not to occur by chance (8 characters or more: every real
/// stream key) is masked wherever it stands, percent-encoded too. A short one (`live`, `1`)
/// is not hunted through all text: that turned `rtmp://host/live` and `127.0.0.1` into `****`.
public final class SecretMasker: Sendable {
    /// Shorter secrets are masked only where they are used.
    public static let maskedEverywhere = 8

    private struct Needles {
        /// Texts holding a secret and what they show instead, longest first.
        var uses: [(text: String, masked: String)] = []
        /// Long secrets and their percent-encoded forms, longest first.
        var secrets: [String] = []
    }
    private let needles = Mutex(Needles())

    public init(secrets: [Secret]) {
        for secret in secrets { add(secret) }
    }

    public func add(_ secret: Secret) {
        let text = secret.reveal()
        guard text.count >= Self.maskedEverywhere else { return }
        var forms = [text]
        if let encoded = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics), encoded != text {
            forms.append(encoded)
        }
        needles.withLock { needles in
            // Longest first, so a secret that contains another is masked whole.
            needles.secrets = Array(Set(needles.secrets + forms)).sorted { $0.count > $1.count }
        }
    }

    /// `text` holds a secret wherever it appears; it shows as `masked` (e.g. the URL with `****` for the key).
    public func add(use text: String, masked: String) {
        guard !text.isEmpty, text != masked else { return }
        needles.withLock { needles in
            guard !needles.uses.contains(where: { $0.text == text }) else { return }
            needles.uses.append((text, masked))
            needles.uses.sort { $0.text.count > $1.text.count }
        }
    }

    public func mask(_ text: String) -> String {
        let needles = needles.withLock { $0 }
        let used = needles.uses.reduce(text) { $0.replacingOccurrences(of: $1.text, with: $1.masked) }
        return needles.secrets.reduce(used) { $0.replacingOccurrences(of: $1, with: Secret.masked) }
    }

    func mask(_ kind: RunEvent.Kind) -> RunEvent.Kind {
        switch kind {
        case .notice(let text): .notice(mask(text))
        case .warning(let text): .warning(mask(text))
        case .failure(let text): .failure(mask(text))
        case .status(let text, let source): .status(mask(text), source: source)
        case .streamEnded(let reason): .streamEnded(reason: mask(reason))
        case .reloadFailed(let origin, let errors): .reloadFailed(origin: origin, errors: errors.map(mask))
        default: kind
        }
    }
}
