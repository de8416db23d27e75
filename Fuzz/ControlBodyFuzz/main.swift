// libFuzzer entry point for the control API's command bodies (`POST /delay`, `POST /gain`) and
// `castline ctl set` changes: any bytes as a JSON body and as typed text must give an adjustment
// in range or a refusal, never a trap or a hang. Compiled into one module with
// StageAdjustment.swift by Fuzz/run.sh (hence no `import CastlineKit`).
import Foundation

/// The delay's and the gain's ranges, and a value reader like theirs (a number with a unit).
private let commands: [(field: String, range: ClosedRange<Double>)] = [("seconds", 0...2_592_000), ("db", -60...20)]

private func value(_ text: String) -> Double? {
    let number = text.prefix { $0.isNumber || $0 == "." || $0 == "-" || $0 == "+" || $0 == "e" }
    return Double(number)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func controlBodyFuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    let text = String(decoding: data, as: UTF8.self)
    for command in commands {
        for adjustment in [try? StageAdjustment(json: data, valueField: command.field, range: command.range),
                           StageAdjustment(text: text, range: command.range, parseValue: value)] {
            switch adjustment {
            case .set(let value)?: precondition(command.range.contains(value))
            case .step(let steps)?: precondition(steps.magnitude <= UInt(StageAdjustment.stepLimit))
                _ = Duration.seconds(1) * steps  // what the delay stage does with it
            case nil: break
            }
        }
    }
    return 0
}
