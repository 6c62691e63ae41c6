/// Strata's version, recorded in `strata_history` with every applied step.
public enum Strata {
    /// The version, as `strata --version` prints it.
    public static let version = "0.1.0"
}
