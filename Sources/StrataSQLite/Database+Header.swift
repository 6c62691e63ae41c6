import StrataCore

/// The two integers an application may keep in the database file's header, as FMDB's `userVersion` and
/// `applicationID` expose them: `PRAGMA user_version` and `PRAGMA application_id` of the main database.
extension Database {
    /// The main database's `user_version`, a number the application owns (0 in a new database). Strata's runner
    /// keeps its history in a table and never reads or writes it.
    public func userVersion() throws -> Int32 {
        try headerField("user_version")
    }

    /// Stores `version` as the main database's `user_version`. Inside a transaction it is kept only if the
    /// transaction commits.
    public func setUserVersion(_ version: Int32) throws {
        try setHeaderField("user_version", to: version)
    }

    /// The main database's `application_id`, which tells file-type tools what the file is (0 unless set).
    public func applicationID() throws -> Int32 {
        try headerField("application_id")
    }

    /// Stores `id` as the main database's `application_id`.
    public func setApplicationID(_ id: Int32) throws {
        try setHeaderField("application_id", to: id)
    }

    private func headerField(_ pragma: String) throws -> Int32 {
        do {
            // SQLite stores both as a signed 32-bit big-endian integer, so any value read fits.
            guard let value = try scalar("PRAGMA main.\(pragma)", .none, as: Int32.self) else {
                throw DatabaseError(kind: .other, message: "PRAGMA \(pragma) returned no value", sql: "PRAGMA main.\(pragma)")
            }
            return value
        } catch let error as DatabaseError {
            throw error.with(message: "cannot read \(pragma): \(error.message)")
        }
    }

    private func setHeaderField(_ pragma: String, to value: Int32) throws {
        // A pragma takes no bound parameters; an Int32 printed in decimal is a literal SQLite reads back exactly.
        do {
            try execute("PRAGMA main.\(pragma) = \(String(value))", .none)
        } catch let error as DatabaseError {
            throw error.with(message: "cannot set \(pragma) to \(value): \(error.message)")
        }
    }
}
