import CastlineKit
import StagePlugins

/// Loads a pipeline from YAML text with the real registry.
func loadSpec(_ yaml: String, environment: [String: String] = [:]) throws -> PipelineSpec {
    try PipelineLoader(catalog: ComponentRegistry.builtin, environment: environment).load(yaml: yaml, file: "test.yaml")
}

/// Every element's factory name in a bin, depth first.
func factories(in bin: Bin) -> [String] {
    bin.children.flatMap { child -> [String] in
        if let inner = child as? Bin, !(child.factoryName.map(["uridecodebin3", "decodebin"].contains) ?? false) {
            return [child.factoryName ?? "bin"] + factories(in: inner)
        }
        return [child.factoryName ?? "?"]
    }
}
