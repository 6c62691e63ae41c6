import CLibPQ
import StrataCore

extension PostgresTarget {
    /// Whether a server answers at the address the URL names and accepts connections (libpq's `PQping`: it
    /// answers even where the login or the database would be refused). False while the server is not running, is
    /// starting up or shutting down, or cannot be reached; and for a URL libpq cannot read.
    public var serverAnswers: Bool {
        PQping(url) == PQPING_OK
    }
}
