import Foundation
import GRDB

/// Looks for a string in everything a service keeps: every column of every table of its SQLite
/// database, and the names and contents of its other files. Used to prove that a deleted account left
/// nothing behind.
enum DataScan {
    struct Finding: CustomStringConvertible {
        var place: String
        var description: String { place }
    }

    /// Every place under `directory` that holds `needle`.
    static func find(_ needle: String, in directory: URL) throws -> [Finding] {
        var findings: [Finding] = []
        let files = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: [.isRegularFileKey])
        while let file = files?.nextObject() as? URL {
            guard (try? file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { continue }
            let name = file.lastPathComponent
            if name.contains(needle) { findings.append(Finding(place: "file name \(file.path)")) }
            if name.hasSuffix(".sqlite") {
                findings += try findInDatabase(needle, at: file.path)
            } else if name.hasSuffix(".sqlite-wal") || name.hasSuffix(".sqlite-shm") {
                continue  // read through the database above
            } else if let contents = try? Data(contentsOf: file), contents.range(of: Data(needle.utf8)) != nil {
                findings.append(Finding(place: "contents of \(file.path)"))
            }
        }
        return findings
    }

    private static func findInDatabase(_ needle: String, at path: String) throws -> [Finding] {
        var configuration = Configuration()
        configuration.readonly = true
        let database = try DatabaseQueue(path: path, configuration: configuration)
        return try database.read { db in
            var findings: [Finding] = []
            let tables = try String.fetchAll(
                db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
            for table in tables {
                let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table.quotedDatabaseIdentifier))")
                    .map { $0["name"] as String }
                for column in columns {
                    let quoted = column.quotedDatabaseIdentifier
                    let count =
                        try Int.fetchOne(
                            db,
                            sql: """
                                SELECT count(*) FROM \(table.quotedDatabaseIdentifier)
                                WHERE instr(CAST(\(quoted) AS BLOB), CAST(? AS BLOB)) > 0
                                """,
                            arguments: [needle]) ?? 0
                    if count > 0 { findings.append(Finding(place: "\(path): \(table).\(column) (\(count) rows)")) }
                }
            }
            return findings
        }
    }
}
