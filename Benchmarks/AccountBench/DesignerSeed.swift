import BenchSupport
import Foundation
import GRDB
import YediCrypto

/// Writes designers straight into a stopped AccountService's database, for the search benchmark.
///
/// Why not SignUp: each sign-up hashes a password at the production scrypt cost (about 170 ms here), so
/// 10,000 designers would take half an hour, and the service has (rightly) no cheaper or hidden path.
/// The benchmark itself cannot link AccountService's store (an executable target), so these statements
/// mirror schema version `account-1` (Sources/AccountService/Store/AccountSchema.swift): the rows of
/// `user`, `designer` and the FTS5 `designer_search` index (rowid = the designer's rowid), as
/// `SQLiteAccountStore.createUser` writes them. The service made the schema itself (the bench starts it
/// once on the empty folder first); `check` refuses to seed a schema whose version or columns differ.
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

    static func write(count: Int, databasePath: String) async throws -> DesignerSeed {
        let database = try DatabaseQueue(path: databasePath)
        defer { try? database.close() }
        try await database.read { db in try check(db) }
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
        try await database.write { db in
            for (index, id, name, district, shop) in rows {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, email, name, phone, gender, birth_year, birth_month, birth_day,
                            profile_image_id, favourite_style, password_hash, created_at_ms)
                        VALUES (?, 'designer', 'yedi', ?, ?, ?, ?, 1990, 1, 1, '', '', ?, ?)
                        """,
                    arguments: [
                        id, "designer-\(index)@bench.yedi", name, String(format: "010%08d", index), 1 + index % 2,
                        passwordHash, now,
                    ])
                try db.execute(
                    sql: """
                        INSERT INTO designer (user_id, description, skills, rank, follower_count, shop_name, shop_phone,
                            city, district, detail, latitude, longitude, opening_hour, closing_hour, messenger_links,
                            time_zone)
                        VALUES (?, '', '["펌","염색"]', 3, 0, ?, '0212345678', '서울', ?, '1층', 37.5, 127.0, 9, 21, '[]',
                            'Asia/Seoul')
                        """,
                    arguments: [id, shop, district])
                try db.execute(
                    sql: """
                        INSERT INTO designer_search (rowid, designer_id, name, shop_name, district)
                        VALUES (?, ?, ?, ?, ?)
                        """,
                    arguments: [db.lastInsertedRowID, id, name, shop, district])
            }
        }
        return DesignerSeed(names: rows.map(\.name))
    }

    /// The schema is `account-1`, and its tables have the columns written here.
    static func check(_ db: Database) throws {
        let applied = Set(try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations"))
        let accountVersions = applied.filter { $0.hasPrefix("account-") }
        guard accountVersions == ["account-1"] else {
            throw BenchError("the seed mirrors schema account-1, the database has \(accountVersions.sorted())")
        }
        let expected: [String: Set<String>] = [
            "user": [
                "id", "role", "app", "email", "name", "phone", "gender", "birth_year", "birth_month", "birth_day",
                "profile_image_id", "favourite_style", "password_hash", "created_at_ms",
            ],
            "designer": [
                "id", "user_id", "description", "skills", "rank", "follower_count", "shop_name", "shop_phone", "city",
                "district", "detail", "latitude", "longitude", "opening_hour", "closing_hour", "messenger_links",
                "time_zone",
            ],
            "designer_search": ["designer_id", "name", "shop_name", "district"],
        ]
        for (table, columns) in expected {
            let actual = Set(try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]))
            guard actual == columns else {
                throw BenchError("\(table) has columns \(actual.sorted()), the seed writes \(columns.sorted())")
            }
        }
    }
}
