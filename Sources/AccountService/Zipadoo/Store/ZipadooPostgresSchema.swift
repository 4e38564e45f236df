import ServiceRuntime

/// ZipadooSchema's version on PostgreSQL, the same name, one statement per string: the member's mole and
/// one friendship row per unordered pair, so crossing requests meet on one primary key. Every row goes
/// with either user's account (ON DELETE CASCADE).
///
/// Differences from SQLite: `app_user` for `user`; the mole's pattern is a regular expression (`GLOB`'s
/// twin); the pair's order is byte order (`COLLATE "C"`, SQLite's BINARY, the order the store computes),
/// whatever the database's collation; no `WITHOUT ROWID`.
enum ZipadooPostgresSchema {
    static let migrations: [PostgresMigration] = [friends]

    static let friends = PostgresMigration(
        "account-11-zipadoo",
        [
            """
            CREATE TABLE zipadoo_member (
                user_id text PRIMARY KEY REFERENCES app_user(id) ON DELETE CASCADE,
                mole text NOT NULL CHECK (mole ~ '^doo[1-9]$')
            )
            """,
            """
            CREATE TABLE zipadoo_friendship (
                user_low text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                user_high text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                requester_id text NOT NULL,
                created_at_ms bigint NOT NULL,
                accepted_at_ms bigint,
                CONSTRAINT zipadoo_friendship_pair PRIMARY KEY (user_low, user_high),
                CHECK (user_low COLLATE "C" < user_high COLLATE "C"),
                CHECK (requester_id IN (user_low, user_high))
            )
            """,
            "CREATE INDEX zipadoo_friendship_high ON zipadoo_friendship (user_high)",
        ])
}
