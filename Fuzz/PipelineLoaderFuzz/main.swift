// libFuzzer entry point for the pipeline loader: any bytes, as a pipeline file and as
// `--set` overrides, must give a PipelineSpec or located ConfigErrors, never a trap,
// an out-of-bounds read or a hang (an alias bomb included). Built and run by Fuzz/run.sh,
// compiled into one module with PipelineConfig's sources and the tests' FixtureCatalog.
import Foundation

private let fuzzLoader = PipelineLoader(catalog: FixtureCatalog(), environment: LoaderFuzzing.environment)

@_cdecl("LLVMFuzzerTestOneInput")
public func pipelineLoaderFuzz(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    let text = String(decoding: data, as: UTF8.self)
    // The bytes as a whole file, then each line as a --set override of a valid one.
    if let spec = try? fuzzLoader.load(yaml: text, file: "fuzz.yaml") {
        _ = spec.yaml(catalog: FixtureCatalog())
    }
    let overrides = text.split(separator: "\n", omittingEmptySubsequences: true).prefix(16).map(String.init)
    _ = try? fuzzLoader.load(yaml: LoaderFuzzing.baseFile, file: "base.yaml", overrides: overrides)
    return 0
}
