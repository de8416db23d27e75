import Foundation
import Testing
@testable import PipelineConfig

/// Every kept pipeline-loader fuzz input (Fuzz/corpus/pipeline-loader) as the fuzzer feeds it:
/// a whole file, then each line as a `--set` override of a valid one.
@Suite struct PipelineFuzzCorpusTests {
    static let loader = PipelineLoader(catalog: FixtureCatalog(), environment: LoaderFuzzing.environment)

    @Test("each loads or is refused with a located error, and what loads writes back out")
    func pipelineFiles() throws {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/pipeline-loader")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        try #require(!files.isEmpty)
        for file in files {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            do {
                _ = try Self.loader.load(yaml: text, file: file).yaml(catalog: FixtureCatalog())
            } catch {
                #expect("\(error)".hasPrefix(file + ":"), "not located in the file: \(error)")
            }
            let overrides = text.split(separator: "\n", omittingEmptySubsequences: true).prefix(16).map(String.init)
            _ = try? Self.loader.load(yaml: LoaderFuzzing.baseFile, file: "base.yaml", overrides: overrides)
        }
    }
}
