import GRDB
import ServiceRuntime

/// SLP's tables, in AccountService's database beside the members they name: accept, end, rate and
/// report change two members' rows at once, in one transaction.
enum SlpSchema {
    /// The queue's positions: an R*Tree keyed by `slp_queue.id`.
    static let positions = NearbyIndex("slp_queue")

    static func migrate(_ migrator: inout DatabaseMigrator) {
        // Issue 28. Every row goes with its member's account (ON DELETE CASCADE); a queue row's position
        // goes with the row (trigger), so no position outlives its entry. A member is in at most one
        // active match: the unique partial index on `slp_match_member`, not a check before the insert.
        migrator.registerMigration("account-10-slp") { db in
            try db.execute(
                sql: """
                    CREATE TABLE slp_profile (
                        user_id TEXT PRIMARY KEY NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        gender INTEGER NOT NULL,
                        birth_year INTEGER NOT NULL, birth_month INTEGER NOT NULL, birth_day INTEGER NOT NULL,
                        email TEXT NOT NULL,
                        favourite_study TEXT NOT NULL DEFAULT '',
                        searchable INTEGER NOT NULL DEFAULT 0,
                        partner_min_age INTEGER NOT NULL,
                        partner_max_age INTEGER NOT NULL,
                        avatar INTEGER NOT NULL DEFAULT 0,
                        background INTEGER NOT NULL DEFAULT 0,
                        owned_avatars TEXT NOT NULL DEFAULT '0',
                        owned_backgrounds TEXT NOT NULL DEFAULT '0',
                        reputation TEXT NOT NULL,
                        dodge_count INTEGER NOT NULL DEFAULT 0 CHECK (dodge_count >= 0),
                        last_dodge_at_ms INTEGER,
                        created_at_ms INTEGER NOT NULL,
                        CHECK (17 <= partner_min_age AND partner_min_age <= partner_max_age AND partner_max_age <= 100)
                    );
                    CREATE TABLE slp_queue (
                        id INTEGER PRIMARY KEY,
                        user_id TEXT NOT NULL UNIQUE REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        studies TEXT NOT NULL,
                        entered_at_ms INTEGER NOT NULL
                    );
                    CREATE TRIGGER slp_queue_unindex AFTER DELETE ON slp_queue
                    BEGIN
                        DELETE FROM slp_queue_rtree WHERE id = old.id;
                    END;
                    CREATE TABLE slp_request (
                        from_id TEXT NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                        to_id TEXT NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (from_id, to_id)
                    );
                    CREATE INDEX slp_request_to ON slp_request(to_id, created_at_ms);
                    CREATE TABLE slp_match (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_a TEXT NOT NULL,
                        user_b TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        ended_at_ms INTEGER,
                        ended_by TEXT,
                        end_reason TEXT CHECK (end_reason IN ('dodge', 'rating'))
                    );
                    CREATE TABLE slp_match_member (
                        match_id TEXT NOT NULL REFERENCES slp_match(id) ON DELETE CASCADE,
                        user_id TEXT NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                        partner_id TEXT NOT NULL,
                        active INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (match_id, user_id)
                    );
                    CREATE UNIQUE INDEX slp_one_active_match ON slp_match_member(user_id) WHERE active = 1;
                    CREATE INDEX slp_match_member_newest ON slp_match_member(user_id, created_at_ms DESC);
                    CREATE INDEX slp_match_member_partner ON slp_match_member(partner_id);
                    CREATE TABLE slp_rating (
                        match_id TEXT NOT NULL REFERENCES slp_match(id) ON DELETE CASCADE,
                        rater_id TEXT NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                        ratee_id TEXT NOT NULL,
                        flags TEXT NOT NULL,
                        comment TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (match_id, rater_id)
                    );
                    CREATE INDEX slp_rating_by_ratee ON slp_rating(ratee_id, created_at_ms DESC);
                    """)
            try positions.create(in: db)
        }
        // Issue 28, second part. `slp_used_ticket`: the sign-up tickets SignUp consumed, so a second
        // SignUp with one answers ALREADY_REGISTERED (no phone number: the hash and the account, which
        // takes it along when deleted; pruned once the ticket would have expired). `phone_send_throttle`:
        // the SMS send limits of phone verification (`PhoneSendThrottle`), per number and per client
        // address, keyed by a hash of either so no number is kept in the clear; surviving restarts like
        // `sign_in_throttle`.
        migrator.registerMigration("account-11-slp-sign-up-and-sends") { db in
            try db.execute(
                sql: """
                    CREATE TABLE slp_used_ticket (
                        ticket_hash BLOB PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        expires_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX slp_used_ticket_user ON slp_used_ticket(user_id);
                    CREATE TABLE phone_send_throttle (
                        key BLOB PRIMARY KEY NOT NULL,
                        window_started_at_ms INTEGER NOT NULL,
                        sends INTEGER NOT NULL,
                        last_sent_at_ms INTEGER NOT NULL,
                        locked_until_ms INTEGER NOT NULL DEFAULT 0
                    ) WITHOUT ROWID;
                    """)
        }
    }
}
