import CastlineKit

extension ComponentRegistry {
    /// Every stage castline ships, registered here and only here.
    public static let builtin = ComponentRegistry(stages: [
        AlarmsStage.self,
        AudioOnlyStage.self,
        DelayStage.self,
        EncodeStage.self,
        GainStage.self,
        GstStage.self,
        LatencyStage.self,
        StatsStage.self,
    ])
}
