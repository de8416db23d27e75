import GstKit
import Testing

/// Each test of a suite with this trait fails if GStreamer printed a CRITICAL while it ran (an
/// element disposed while playing, a bad call): the run may go on, but the defect is real.
public struct NoGStreamerCriticals: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                                    performing function: @Sendable () async throws -> Void) async throws {
        // The suite's own scope: its tests are counted one by one.
        guard testCase != nil else { return try await function() }
        GstCriticals.watch()
        let before = GstCriticals.seen
        try await function()
        #expect(GstCriticals.seen == before, "GStreamer printed a CRITICAL during this test (above)")
    }
}

extension Trait where Self == NoGStreamerCriticals {
    public static var noGStreamerCriticals: Self { Self() }
}
