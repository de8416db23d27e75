import AudioOnlyPlugin
import CastlineKit
import DelayPlugin
import EncodePlugin
import GstPlugin
import StatsPlugin

extension ComponentRegistry {
    /// Every stage castline ships, registered here and only here.
    public static let builtin = ComponentRegistry(stages: [
        AudioOnlyStage.self,
        DelayStage.self,
        EncodeStage.self,
        GstStage.self,
        StatsStage.self,
    ])
}
