import GRDB

/// Zipadoo's tables in AccountService's database, beside the users they pair (docs/zipadoo.md): the
/// member's mole avatar, and friendships, one row per unordered pair (pending or accepted), so crossing
/// requests leave one row and a friendship changes both sides in one statement. Every row goes with
/// either user's account (ON DELETE CASCADE): deleted members are in nobody's list.
enum ZipadooSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("account-11-zipadoo") { db in
            try db.execute(
                sql: """
                    CREATE TABLE zipadoo_member (
                        user_id TEXT PRIMARY KEY NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        mole TEXT NOT NULL CHECK (mole GLOB 'doo[1-9]')
                    );
                    CREATE TABLE zipadoo_friendship (
                        user_low TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        user_high TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        requester_id TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        accepted_at_ms INTEGER,
                        PRIMARY KEY (user_low, user_high),
                        CHECK (user_low < user_high),
                        CHECK (requester_id IN (user_low, user_high))
                    ) WITHOUT ROWID;
                    CREATE INDEX zipadoo_friendship_high ON zipadoo_friendship(user_high);
                    """)
        }
    }
}
