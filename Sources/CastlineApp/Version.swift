/// castline's version, as `castline --version` prints it.
public enum CastlineVersion {
    public static let current = "0.8.0"
}
