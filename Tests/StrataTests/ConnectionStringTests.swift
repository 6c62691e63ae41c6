import CLibPQ
import Foundation
import Strata
@testable import StrataCore
@testable import StrataPostgres
import StrataSQLite
import XCTest

/// How `--database` and `<database path>` values are told apart (PostgreSQL URI, libpq keyword/value string,
/// SQLite path, a URI Strata does not read), and that no part of a password survives in what is printed about them.
/// No server needed.
final class ConnectionStringTests: XCTestCase {
    /// Display: the password libpq reads and the one a reader sees are both hidden, whatever splits them.
    func testRedactedHidesWhatLibpqOrAReaderCouldTakeForThePassword() {
        let cases: [(String, String)] = [
            // libpq takes `se` (first '@'), a reader `se@cretpw` (last '@'): both hidden.
            ("postgresql://postgres:se@cretpw@127.0.0.1:54330/postgres", "postgresql://postgres:•••@127.0.0.1:54330/postgres"),
            // libpq reads password a, host b and database c@host/db; a reader the password a@b/c.
            ("postgresql://u:a@b/c@host/db", "postgresql://u:•••@host/db"),
            ("postgresql://u:p:w@h/d", "postgresql://u:•••@h/d"),
            // A scheme in another case, or any other scheme: its password is hidden too.
            ("PostgreSQL://postgres:secretpw@h/db", "PostgreSQL://postgres:•••@h/db"),
            ("  postgres://u:secretpw@h/db", "  postgres://u:•••@h/db"),
            ("mysql://u:secretpw@h/db", "mysql://u:•••@h/db"),
            ("postgresql:u:secretpw@h/db", "postgresql:u:•••@h/db"),
            ("file://u:secretpw@h/x.db", "file://u:•••@h/x.db"),
            ("file:x.db?password=secretpw&mode=ro", "file:x.db?password=•••&mode=ro"),
            // libpq ends a parameter at '&' and refuses `b`; a reader sees the password a&b.
            ("postgresql://h/d?password=a&b&sslmode=require", "postgresql://h/d?password=•••&sslmode=require"),
            ("postgresql://h/d?password=a&b=c", "postgresql://h/d?password=•••"),
            ("postgresql://h/d?sslpassword=k&user=me", "postgresql://h/d?sslpassword=•••&user=me"),
            // Keyword/value strings: a value, quoted or not, and the words after it that are no keyword.
            ("host=127.0.0.1 port=54330 user=postgres password=secretpw dbname=postgres",
             "host=127.0.0.1 port=54330 user=postgres password=••• dbname=postgres"),
            ("host=x password=se cretpw dbname=d", "host=x password=••• dbname=d"),
            ("host=x password=se cret=pw dbname=d", "host=x password=••• dbname=d"),
            ("password='a b' host=x", "password=••• host=x"),
            ("host=x password='unterminated dbname=d", "host=x password=•••"),
            ("PASSWORD=secretpw host=x", "PASSWORD=••• host=x"),
            ("host=x oauth_client_secret=s3 dbname=d", "host=x oauth_client_secret=••• dbname=d"),
            // A keyword's value that is a URI has its own password.
            ("dbname=postgresql://u:secretpw@h/x host=y", "dbname=postgresql://u:•••@h/x host=y"),
            ("dbname='postgresql://u:secretpw@h/x'", "dbname='postgresql://u:•••@h/x'"),
            // No secret: unchanged.
            ("postgresql://h:5432/d?user=me@example.com", "postgresql://h:5432/d?user=me@example.com"),
            ("data/app=v2.db", "data/app=v2.db"),
            ("file:x.db?mode=ro", "file:x.db?mode=ro"),
        ]
        for (text, shown) in cases {
            XCTAssertEqual(DatabaseURL.redacted(text), shown, text)
        }
    }

    /// What libpq says about a connection string it refuses quotes pieces of it: none of a password's survives.
    func testLibpqsParseErrorsKeepNoPieceOfThePassword() throws {
        let cases: [(String, [String])] = [
            ("postgresql://u:a%zzsecretpw@h/d", ["secretpw"]),              // invalid percent-encoded token: "…"
            ("postgresql://u:secretpw%00x@h/d", ["secretpw"]),              // forbidden value %00: "…"
            ("postgresql://h/d?password=a&secretpw", ["secretpw"]),          // missing key/value separator: "secretpw"
            ("postgresql://h/d?password=a&secretpw=1", ["secretpw"]),        // invalid URI query parameter: "secretpw"
            ("postgresql://h/d?password=se%zzcretpw", ["cretpw"]),
            ("host=x password=se cretpw", ["cretpw"]),                      // missing "=" after "cretpw"
            ("host=x password=se cretpw=1", ["cretpw"]),                    // invalid connection option "cretpw"
            ("host=x password=se 'cretpw", ["cretpw"]),
        ]
        for (location, secrets) in cases {
            let problem = try XCTUnwrap(PostgresURL.problem(with: location), "libpq refuses \(location)")
            for secret in secrets {
                XCTAssertFalse(problem.contains(secret), "\(location): \(problem)")
            }
            XCTAssertTrue(problem.contains(DatabaseURL.redaction), "\(location): \(problem)")
        }
        XCTAssertNil(PostgresURL.problem(with: "host=x port=5 user=u password='a b' dbname=d"))
        XCTAssertNil(PostgresURL.problem(with: "postgresql://u:pw@h/d"))
        // libpq parses this one as host u, port "secretpw", database "x@h/d", and refuses the port on connecting.
        XCTAssertThrowsError(try PostgresConnection(url: "postgresql://u:secretpw/x@h/d")) { error in
            XCTAssertTrue("\(error)".contains("invalid integer value \"•••\""), "\(error)")
            XCTAssertFalse("\(error)".contains("secretpw"), "\(error)")
        }
    }

    /// Messages quoting host, user or database names libpq built from pieces of a password.
    func testMessagesHideEveryPieceOfThePasswordAsAWholeWord() {
        let url = "postgresql://postgres:se@cretpw@127.0.0.1:54330/postgres"
        XCTAssertEqual(DatabaseURL.redacted("could not translate host name \"cretpw@127.0.0.1\" to address: Name or service not known",
                                            secretsOf: url),
                       "could not translate host name \"•••@127.0.0.1\" to address: Name or service not known",
                       "`se` is a piece too, but not inside the word `service`")
        XCTAssertEqual(DatabaseURL.redacted("database \"se@cretpw\" and „cretpw“", secretsOf: url), "database \"•••\" and „•••“")
        // Percent-decoded: libpq decodes a host before quoting it.
        XCTAssertEqual(DatabaseURL.redacted("host \"cretpw@h\"", secretsOf: "postgresql://u:x@cr%65tpw@h/d"), "host \"•••@h\"")
        // The location itself, wherever it is quoted.
        XCTAssertEqual(DatabaseURL.redacted("in \"postgresql://u:pw@h/d\"", secretsOf: "postgresql://u:pw@h/d"), "in \"postgresql://u:•••@h/d\"")
        // Unquoted and unescaped keyword values.
        XCTAssertEqual(DatabaseURL.redacted("value a b\\c", secretsOf: "password='a b\\\\c'"), "value •••")
    }

    /// libpq's keyword/value strings are PostgreSQL; a URI with another scheme is nothing Strata reads.
    func testConnectionStringsAreToldFromSQLitePaths() {
        for text in ["host=db dbname=app", "  dbname = app", "service=prod", "HOST=db", "app=v2.db"] {
            XCTAssertTrue(DatabaseURL.isKeywordValue(text), text)
            XCTAssertTrue(PostgresURL.isPostgres(text), text)
        }
        for text in ["app.db", "./host=db", "/data/host=db", "file:x.db", "=x", "1x=2", "", "postgres"] {
            XCTAssertFalse(DatabaseURL.isKeywordValue(text), text)
        }
        let schemes: [(String, String?)] = [
            ("PostgreSQL://u:pw@h/d", "PostgreSQL"), ("POSTGRES://h/d", "POSTGRES"), (" postgresql://h/d", "postgresql"),
            ("mysql://h/d", "mysql"), ("postgres:/d", "postgres"), ("Postgresql:d", "Postgresql"),
            ("postgresql://h/d", nil), ("postgres://h/d", nil), ("file:x.db", nil), ("file:///tmp/x.db", nil),
            ("app.db", nil), ("c:/data/app.db", nil),
        ]
        for (text, scheme) in schemes {
            XCTAssertEqual(DatabaseURL.unreadScheme(of: text), scheme, text)
        }
    }

    /// Every keyword this libpq knows is one the redaction knows, so a word after a password is hidden unless
    /// libpq would read it as a keyword of its own.
    func testTheRedactionKnowsEveryKeywordOfThisLibpq() throws {
        let defaults = try XCTUnwrap(PQconndefaults())
        defer { PQconninfoFree(defaults) }
        var index = 0
        while let keyword = defaults[index].keyword {
            let name = String(cString: keyword)
            XCTAssertTrue(DatabaseURL.libpqKeywords.contains(name), name)
            if let display = defaults[index].dispchar, String(cString: display) == "*" {
                XCTAssertTrue(DatabaseURL.secretKeywords.contains(name), "libpq hides \(name)")
            }
            index += 1
        }
    }

    /// `--database` routing: a keyword/value string is a PostgreSQL target (nothing is connected to or created
    /// yet; the CLI tests show no file appears); one libpq refuses, and a URI of another scheme, are refused without the password.
    func testDatabaseTargetsRouteAndRefuseWithoutThePassword() throws {
        let keywords = "host=127.0.0.1 port=54330 user=postgres password=secretpw dbname=postgres"
        let target = try DatabaseTargets.target(option: keywords, manifest: nil)
        XCTAssertTrue(target is PostgresTarget, "\(type(of: target))")
        XCTAssertEqual(target.name, "host=127.0.0.1 port=54330 user=postgres password=••• dbname=postgres")
        for refused in ["HOST=x password=secretpw", "host=x password=se cretpw", "PostgreSQL://postgres:secretpw@h/db",
                        "POSTGRES://postgres:secretpw@h/db", " postgresql://u:secretpw@h/db", "mysql://u:secretpw@h/db",
                        "postgresql:u:secretpw@h"] {
            XCTAssertThrowsError(try DatabaseTargets.target(option: refused, manifest: nil), refused) { error in
                XCTAssertTrue(error is DatabaseLocationError, "\(refused): \(error)")
                XCTAssertFalse("\(error)".contains("secretpw") || "\(error)".contains("cretpw"), "\(error)")
            }
        }
        XCTAssertTrue(try DatabaseTargets.target(option: "./host=x", manifest: nil) is SQLiteTarget)
    }
}
