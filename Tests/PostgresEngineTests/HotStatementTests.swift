import PostgresNIO
import PostgresTestSupport
import XCTest

@testable import ServiceRuntime

/// `HotStatement` against a real PostgreSQL: prepared once per connection and run by name after, with the
/// declared parameter types whatever the first call bound (a NULL, or another integer width), and a call
/// binding the wrong type or count refused before anything is sent.
final class HotStatementTests: XCTestCase {
    private var database: TestDatabase!

    /// A note with a nullable `integer` and a nullable `text`.
    private enum InsertNote: HotStatement {
        static let sql = "INSERT INTO note (id, width, label) VALUES ($1, $2, $3) RETURNING id"
        static let parameters: [PostgresDataType] = [.int8, .int4, .text]
    }

    private enum NoteWidths: HotStatement {
        static let sql = "SELECT width FROM note WHERE id = ANY($1::bigint[]) ORDER BY id"
        static let parameters: [PostgresDataType] = [.int8Array]
    }

    /// A table made only in the test that prepares against it before it exists.
    private enum CountLater: HotStatement {
        static let parameters: [PostgresDataType] = []
        static let sql = "SELECT count(*) FROM later"
    }

    override func setUp() async throws {
        database = try await TestDatabase()
        try await database.postgres.write { tx in
            try await tx.query("CREATE TABLE note (id bigint PRIMARY KEY, width integer, label text)")
        }
    }

    override func tearDown() async throws {
        try await database?.close()
        database = nil
    }

    func testANullFirstThenValuesOfTheDeclaredTypesAreStoredAsBound() async throws {
        let widths = try await debugged {
            try await database.postgres.write { tx in
                // The first call binds NULLs: the statement is prepared with the declared types regardless.
                try await tx.execute(InsertNote.self, Int64(1), nil, nil)
                try await tx.execute(InsertNote.self, Int64(2), Int32(640), "wide")
                try await tx.execute(InsertNote.self, Int64(3), Int32(-7), nil)
                return try await tx.execute(NoteWidths.self, [Int64(1), 2, 3]).map { try $0.decode(Int32?.self) }
            }
        }
        XCTAssertEqual(widths, [nil, 640, -7])
    }

    private func debugged<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch {
            XCTFail(String(reflecting: error))
            throw error
        }
    }

    func testAStatementIsPreparedOnceOnItsConnectionUnderItsName() async throws {
        let prepared = try await database.postgres.write { tx in
            for id in 1...3 { try await tx.execute(InsertNote.self, Int64(id), Int32(id), "note") }
            return try await tx.query(
                "SELECT name, statement FROM pg_prepared_statements WHERE statement = \(InsertNote.sql)"
            ).map { try $0.decode((String, String).self) }
        }
        XCTAssertEqual(prepared.count, 1, "three calls, one preparation: \(prepared)")
        XCTAssertTrue(prepared.first?.0.hasPrefix("yedi_hot_") ?? false, "\(prepared)")
    }

    func testAValueOfAnotherTypeIsRefusedBeforeReachingTheDatabase() async throws {
        do {
            try await database.postgres.write { tx in
                // An Int is 8 bytes where the statement declared a 4-byte integer.
                try await tx.execute(InsertNote.self, Int64(1), 640, "wide")
            }
            XCTFail("an int8 bound to an int4 parameter was accepted")
        } catch let error as HotStatementMismatch {
            XCTAssertTrue(error.description.contains("$2"), error.description)
        }
        do {
            try await database.postgres.write { tx in try await tx.execute(InsertNote.self, Int64(1), Int32(1)) }
            XCTFail("two values for three parameters were accepted")
        } catch let error as HotStatementMismatch {
            XCTAssertTrue(error.description.contains("3 values, not 2"), error.description)
        }
        let stored = try await database.postgres.write { tx in
            try await tx.query("SELECT count(*) FROM note").first?.decode(Int64.self)
        }
        XCTAssertEqual(stored, 0)
    }

    /// postgres-nio keeps a failed preparation's error on its connection for good; the statement closes
    /// the connection instead, so with a pool of one the next call prepares afresh and works.
    func testAFailedPreparationDoesNotBreakItsConnectionForGood() async throws {
        let single = try await TestDatabase(poolSize: 1)
        do {
            do {
                _ = try await single.postgres.read { connection in
                    try await connection.execute(CountLater.self, logger: TestPostgres.logger)
                }
                XCTFail("a statement over a missing table was prepared")
            } catch {}
            try await single.postgres.write { tx in try await tx.query("CREATE TABLE later (id bigint)") }
            let count = try await single.postgres.read { connection in
                try await connection.execute(CountLater.self, logger: TestPostgres.logger).first?.decode(Int64.self)
            }
            XCTAssertEqual(count, 0, "the statement works once its table exists")
        } catch {
            try? await single.close()
            throw error
        }
        try await single.close()
    }
}
