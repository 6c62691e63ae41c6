import CSQLite
import Foundation
import XCTest
@testable import StrataCore
@testable import StrataSQLite

/// `user_version` and `application_id`, the application's two integers in the file header.
final class DatabaseHeaderTests: XCTestCase {
    func testUserVersionIsZeroInANewDatabaseAndKeepsWhatIsSet() throws {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("v.sqlite").path
        do {
            let db = try Database(path: path)
            XCTAssertEqual(try db.userVersion(), 0)
            try db.setUserVersion(42)
            XCTAssertEqual(try db.userVersion(), 42)
        }
        let again = try Database(path: path)
        XCTAssertEqual(try again.userVersion(), 42, "stored in the file, not the connection")
        XCTAssertEqual(try again.scalar("PRAGMA user_version", .none, as: Int.self), 42)
    }

    func testApplicationIDIsSeparateFromUserVersion() throws {
        let db = try Database()
        XCTAssertEqual(try db.applicationID(), 0)
        try db.setApplicationID(0x5354_5241)
        try db.setUserVersion(7)
        XCTAssertEqual(try db.applicationID(), 0x5354_5241)
        XCTAssertEqual(try db.userVersion(), 7)
    }

    func testTheWholeInt32RangeRoundTrips() throws {
        let db = try Database()
        for value in [Int32.min, -1, 1, Int32.max] {
            try db.setUserVersion(value)
            XCTAssertEqual(try db.userVersion(), value)
            try db.setApplicationID(value)
            XCTAssertEqual(try db.applicationID(), value)
        }
    }

    func testAVersionSetInARolledBackTransactionIsNotKept() throws {
        let db = try Database()
        try db.setUserVersion(1)
        struct Abandon: Error {}
        XCTAssertThrowsError(try db.transaction { db in
            try db.setUserVersion(2)
            XCTAssertEqual(try db.userVersion(), 2)
            throw Abandon()
        })
        XCTAssertEqual(try db.userVersion(), 1)
    }

    func testSettingOnAReadOnlyDatabaseFailsNamingTheField() throws {
        let path = try makeTemporaryDirectory(self).appendingPathComponent("ro.sqlite").path
        try Database(path: path).setUserVersion(3)
        let reader = try Database(path: path, configuration: .init(readOnly: true))
        XCTAssertEqual(try reader.userVersion(), 3)
        let error = assertThrows(DatabaseError.self) { try reader.setUserVersion(4) }
        XCTAssertEqual(error?.kind, .readOnly)
        XCTAssertTrue(error?.message.hasPrefix("cannot set user_version to 4: ") ?? false, error?.message ?? "")
        let idError = assertThrows(DatabaseError.self) { try reader.setApplicationID(5) }
        XCTAssertTrue(idError?.message.hasPrefix("cannot set application_id to 5: ") ?? false, idError?.message ?? "")
        XCTAssertEqual(try reader.userVersion(), 3)
    }

    func testReadingFromAClosedConnectionFailsNamingTheField() throws {
        let db = try Database()
        db.close()
        let error = assertThrows(DatabaseError.self) { try db.userVersion() }
        XCTAssertEqual(error?.kind, .misuse)
        XCTAssertTrue(error?.message.hasPrefix("cannot read user_version: ") ?? false, error?.message ?? "")
        XCTAssertEqual(assertThrows(DatabaseError.self) { try db.applicationID() }?.kind, .misuse)
    }
}
