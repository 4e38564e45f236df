import BenchSupport
import Foundation
import GRDB
import YediCrypto

/// Writes designers straight into a stopped AccountService's database, for the search benchmark.
///
/// Why not SignUp: each sign-up hashes a password at the production scrypt cost (about 170 ms here), so
/// 10,000 designers would take half an hour, and the service has (rightly) no cheaper or hidden path.
/// The benchmark itself cannot link AccountService's store (an executable target), so these statements
/// mirror schema version `account-1` on either engine, as the store's `createUser` writes them: on SQLite
/// (Sources/AccountService/Store/AccountSchema.swift) the rows of `user`, `designer` and the FTS5
/// `designer_search` index (rowid = the designer's rowid); on PostgreSQL (`AccountPostgresSchema.swift`)
/// `app_user` and `designer`, which its `pg_trgm` indexes cover. The service made the schema itself (the
/// bench starts it once on the empty folder or database first); `check` refuses to seed a SQLite schema
/// whose version or columns differ, and the PostgreSQL batch refuses a database without `account-1`.
struct DesignerSeed: Sendable {
    /// Every seeded designer's name, for queries that hit.
    var names: [String]

    static let families = ["김", "이", "박", "최", "정", "강", "조", "윤", "장", "임", "한", "오", "서", "신", "권", "황"]
    static let syllables = [
        "민", "지", "서", "윤", "하", "준", "도", "현", "수", "영", "우", "진", "예", "은", "채", "원", "유", "나", "연", "호",
    ]
    static let districts = [
        "강남구", "서초구", "마포구", "용산구", "성동구", "송파구", "종로구", "영등포구", "광진구", "동작구", "관악구", "은평구",
        "서대문구", "강서구", "노원구", "해운대구",
    ]
    static let roads = ["테헤란로", "가로수길", "연남로", "이태원로", "성수이로", "올림픽로", "율곡로", "여의대로", "압구정로", "홍익로"]
    static let shopWords = ["살롱", "헤어", "뷰티", "스튜디오", "아뜰리에", "하우스", "랩", "클럽"]
    static let shopPrefixes = ["준", "리안", "블루", "차", "모아", "온", "봄", "숲", "라온", "다온", "해", "별"]

    /// Seeds `count` designers into the SQLite file at `databasePath`, or into `postgres` when given.
    static func write(count: Int, databasePath: String, postgres: BenchPostgres?) async throws -> DesignerSeed {
        if postgres == nil {
            let database = try DatabaseQueue(path: databasePath)
            try await database.read { db in try check(db) }
            try database.close()
        }
        // One real hash (production cost), shared: the seeded designers never sign in in the bench.
        let passwordHash = try await PasswordHasher().hash("seeded-designer-1")
        var random = SplitMix64(seed: 42)
        func pick(_ list: [String]) -> String { list[Int(random.next() % UInt64(list.count))] }
        let rows = (0..<count).map { index in
            (
                index: index, id: String(format: "seed-designer-%06d", index),
                name: pick(families) + pick(syllables) + pick(syllables),
                district: pick(districts) + " " + pick(roads), shop: pick(shopPrefixes) + " " + pick(shopWords)
            )
        }
        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        var batch = SeedBatch(version: "account-1")
        let users = postgres == nil ? "user" : "app_user"
        for (index, id, name, district, shop) in rows {
            batch.add(
                """
                INSERT INTO \(users) (id, role, app, email, name, phone, gender, birth_year, birth_month, birth_day,
                    profile_image_id, favourite_style, password_hash, created_at_ms)
                VALUES (?, 'designer', 'yedi', ?, ?, ?, ?, 1990, 1, 1, '', '', ?, ?)
                """,
                [
                    .text(id), .text("designer-\(index)@bench.yedi"), .text(name),
                    .text(String(format: "010%08d", index)),
                    .integer(Int64(1 + index % 2)), .text(passwordHash), .integer(now),
                ])
            batch.add(
                """
                INSERT INTO designer (user_id, description, skills, rank, follower_count, shop_name, shop_phone,
                    city, district, detail, latitude, longitude, opening_hour, closing_hour, messenger_links,
                    time_zone)
                VALUES (?, '', '["펌","염색"]', 3, 0, ?, '0212345678', '서울', ?, '1층', 37.5, 127.0, 9, 21, '[]',
                    'Asia/Seoul')
                """,
                [.text(id), .text(shop), .text(district)])
            if postgres == nil {
                batch.add(
                    """
                    INSERT INTO designer_search (rowid, designer_id, name, shop_name, district)
                    VALUES ((SELECT rowid FROM designer WHERE user_id = ?), ?, ?, ?, ?)
                    """,
                    [.text(id), .text(id), .text(name), .text(shop), .text(district)])
            }
        }
        if let postgres {
            // As after any bulk load (autovacuum would, a minute later): the planner's statistics.
            batch.add("ANALYZE app_user", [])
            batch.add("ANALYZE designer", [])
            try await batch.apply(to: postgres)
        } else {
            try batch.apply(toSQLite: databasePath)
        }
        return DesignerSeed(names: rows.map(\.name))
    }

    /// The schema is `account-1`, and its tables have the columns written here.
    static func check(_ db: Database) throws {
        let applied = Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        guard applied.contains("account-1") else {
            throw BenchError("the seed mirrors schema account-1, the database has \(applied.sorted())")
        }
        let written: [String: Set<String>] = [
            "user": [
                "id", "role", "app", "email", "name", "phone", "gender", "birth_year", "birth_month", "birth_day",
                "profile_image_id", "favourite_style", "password_hash", "created_at_ms",
            ],
            "designer": [
                "user_id", "description", "skills", "rank", "follower_count", "shop_name", "shop_phone", "city",
                "district", "detail", "latitude", "longitude", "opening_hour", "closing_hour", "messenger_links",
                "time_zone",
            ],
            "designer_search": ["designer_id", "name", "shop_name", "district"],
        ]
        // Later versions may add columns; the seed stays valid while each one it does not write has a
        // default, may be null or is the rowid alias.
        for (table, columns) in written {
            let actual = try Row.fetchAll(
                db, sql: "SELECT name, \"notnull\", dflt_value, pk FROM pragma_table_info(?)", arguments: [table])
            let names = Set(actual.map { $0["name"] as String })
            guard columns.isSubset(of: names) else {
                throw BenchError("\(table) lacks \(columns.subtracting(names).sorted()), which the seed writes")
            }
            let unwritable = actual.filter { row in
                !columns.contains(row["name"]) && row["notnull"] as Int == 1 && row["dflt_value"] as String? == nil
                    && row["pk"] as Int == 0
            }
            guard unwritable.isEmpty else {
                throw BenchError(
                    "\(table) requires \(unwritable.map { $0["name"] as String }.sorted()), which the seed does not write"
                )
            }
        }
    }
}
