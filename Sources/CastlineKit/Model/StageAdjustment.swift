import Foundation

/// What a command asks: a value in the command's unit, or steps of the stage's step.
/// Read from a `POST /NAME` body and from `castline ctl set NAME CHANGE`; both are input
/// from outside (and fuzzed: Fuzz/ControlBodyFuzz), so every bound is checked here.
public enum StageAdjustment: Sendable, Equatable {
    case set(Double)
    case step(Int)

    /// The most steps one request may move (a million 1 s steps is eleven days): a step count
    /// times the stage's step must not overflow.
    public static let stepLimit = 1_000_000

    /// Why a request was refused: one line, with the usage.
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// A request body: `{"<valueField>": number}` or `{"step": whole number}`.
    public init(json: Data, valueField: String, range: ClosedRange<Double>) throws(Refusal) {
        let bounds = [range.lowerBound, range.upperBound].map { $0.formatted(.number.grouping(.never)) }
        let usage = "(send {\"\(valueField)\": N} with N from \(bounds[0]) to \(bounds[1]), or {\"step\": 1} or {\"step\": -1})"
        guard let object = try? JSONDecoder().decode([String: Double].self, from: json) else {
            throw Refusal(description: "the body is not a JSON object of numbers \(usage)")
        }
        if let unknown = object.keys.sorted().first(where: { $0 != valueField && $0 != "step" }) {
            throw Refusal(description: "unknown field \"\(unknown)\" \(usage)")
        }
        switch (object[valueField], object["step"]) {
        case (let value?, nil):
            guard value.isFinite, range.contains(value) else { throw Refusal(description: "\(valueField) out of range \(usage)") }
            self = .set(value)
        case (nil, let step?):
            // No step moves nothing: refused, as it would only re-apply what is set.
            guard step.rounded() == step, step != 0, step.magnitude <= Double(Self.stepLimit) else {
                throw Refusal(description: "step: a whole number other than 0, at most \(Self.stepLimit) either way \(usage)")
            }
            self = .step(Int(step))
        default:
            throw Refusal(description: "give one of \(valueField) or step \(usage)")
        }
    }

    /// Where no value is below 0 (a delay), signed text other than whole steps (`+1.5`) would read
    /// as "that much more", not as the value: it is neither, and refused.
    public static func isSignedAmount(_ text: String, range: ClosedRange<Double>) -> Bool {
        guard range.lowerBound >= 0, let sign = text.first, sign == "+" || sign == "-" else { return false }
        return !text.dropFirst().allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// As typed: `+2` and `-1` are steps; anything else is a value (`12s`, `-6dB`) that
    /// `parseValue` reads in the command's own words. Nil when it is neither, and for any
    /// other signed text where values cannot be negative (`+1.5` for a delay).
    public init?(text: String, range: ClosedRange<Double>, parseValue: (String) -> Double?) {
        let digits = text.dropFirst()
        if let sign = text.first, sign == "+" || sign == "-", !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }) {
            // A sign and digits is a step count, whatever its size: too many is refused, not read as a value.
            guard let steps = Int(digits), steps > 0, steps <= Self.stepLimit else { return nil }
            self = .step(sign == "-" ? -steps : steps)
            return
        }
        if Self.isSignedAmount(text, range: range) { return nil }
        guard let value = parseValue(text), value.isFinite, range.contains(value) else { return nil }
        self = .set(value)
    }
}
