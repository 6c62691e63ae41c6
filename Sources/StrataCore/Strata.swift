/// Strata's version, recorded in `strata_history` with every applied step.
public enum Strata {
    public static let version = "0.1.0"
}
