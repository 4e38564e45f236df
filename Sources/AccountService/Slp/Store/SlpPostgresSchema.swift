import ServiceRuntime

/// SlpSchema's versions on PostgreSQL: the same names, in the same place of AccountService's list
/// (`account-10-slp` after `account-8-moderation`, then `account-11-slp-sign-up-and-sends`), one
/// statement per string.
///
/// Differences from SQLite, each for the other engine: no R*Tree and no trigger: a queue row keeps its
/// position and the search narrows by a B-tree on `(latitude, longitude)` (`PostgresSlpStore+Nearby`),
/// so a position still goes with its row; the queue's id is an identity column (SQLite's rowid, the
/// search's tie-breaker); `seq` on match members and ratings is the insertion order SQLite's rowid gave
/// ("newest" ties); flags are `boolean`, blobs `bytea`, integers `bigint`. Indexes by rater and by each
/// side of a match serve account deletion (`PostgresSlpStore.forget`).
enum SlpPostgresSchema {
    static let migrations: [PostgresMigration] = [slp, signUpAndSends]

    /// Issue 28. Every row goes with its member's account (ON DELETE CASCADE). A member is in at most one
    /// active match: the unique partial index `slp_one_active_match`, the last word behind the store's row
    /// locks.
    static let slp = PostgresMigration(
        "account-10-slp",
        [
            """
            CREATE TABLE slp_profile (
                user_id text PRIMARY KEY REFERENCES app_user(id) ON DELETE CASCADE,
                gender bigint NOT NULL,
                birth_year bigint NOT NULL, birth_month bigint NOT NULL, birth_day bigint NOT NULL,
                email text NOT NULL,
                favourite_study text NOT NULL DEFAULT '',
                searchable boolean NOT NULL DEFAULT false,
                partner_min_age bigint NOT NULL,
                partner_max_age bigint NOT NULL,
                avatar bigint NOT NULL DEFAULT 0,
                background bigint NOT NULL DEFAULT 0,
                owned_avatars text NOT NULL DEFAULT '0',
                owned_backgrounds text NOT NULL DEFAULT '0',
                reputation text NOT NULL,
                dodge_count bigint NOT NULL DEFAULT 0 CHECK (dodge_count >= 0),
                last_dodge_at_ms bigint,
                created_at_ms bigint NOT NULL,
                CHECK (17 <= partner_min_age AND partner_min_age <= partner_max_age AND partner_max_age <= 100)
            )
            """,
            """
            CREATE TABLE slp_queue (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                user_id text NOT NULL UNIQUE REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                latitude double precision NOT NULL,
                longitude double precision NOT NULL,
                studies text NOT NULL,
                entered_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX slp_queue_position ON slp_queue (latitude, longitude)",
            "CREATE INDEX slp_queue_by_entry ON slp_queue (entered_at_ms)",
            """
            CREATE TABLE slp_request (
                from_id text NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                to_id text NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                created_at_ms bigint NOT NULL,
                PRIMARY KEY (from_id, to_id)
            )
            """,
            "CREATE INDEX slp_request_to ON slp_request (to_id, created_at_ms)",
            """
            CREATE TABLE slp_match (
                id text PRIMARY KEY,
                user_a text NOT NULL,
                user_b text NOT NULL,
                created_at_ms bigint NOT NULL,
                ended_at_ms bigint,
                ended_by text,
                end_reason text CHECK (end_reason IN ('dodge', 'rating'))
            )
            """,
            "CREATE INDEX slp_match_by_a ON slp_match (user_a)",
            "CREATE INDEX slp_match_by_b ON slp_match (user_b)",
            """
            CREATE TABLE slp_match_member (
                match_id text NOT NULL REFERENCES slp_match(id) ON DELETE CASCADE,
                user_id text NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                partner_id text NOT NULL,
                active boolean NOT NULL,
                created_at_ms bigint NOT NULL,
                seq bigint GENERATED ALWAYS AS IDENTITY,
                PRIMARY KEY (match_id, user_id)
            )
            """,
            "CREATE UNIQUE INDEX slp_one_active_match ON slp_match_member (user_id) WHERE active",
            "CREATE INDEX slp_match_member_newest ON slp_match_member (user_id, created_at_ms DESC, seq DESC)",
            "CREATE INDEX slp_match_member_partner ON slp_match_member (partner_id)",
            """
            CREATE TABLE slp_rating (
                match_id text NOT NULL REFERENCES slp_match(id) ON DELETE CASCADE,
                rater_id text NOT NULL REFERENCES slp_profile(user_id) ON DELETE CASCADE,
                ratee_id text NOT NULL,
                flags text NOT NULL,
                comment text NOT NULL,
                created_at_ms bigint NOT NULL,
                seq bigint GENERATED ALWAYS AS IDENTITY,
                PRIMARY KEY (match_id, rater_id)
            )
            """,
            "CREATE INDEX slp_rating_by_ratee ON slp_rating (ratee_id, created_at_ms DESC, seq DESC)",
            "CREATE INDEX slp_rating_by_rater ON slp_rating (rater_id)",
        ])

    /// Issue 28, second part. `slp_used_ticket`: the sign-up tickets SignUp consumed (by hash, with the
    /// account, which takes it along when deleted). `phone_send_throttle`: the SMS send limits of phone
    /// verification per hashed number or address (`PostgresAccountStore.startPhoneVerification` reads and
    /// writes it under advisory locks).
    static let signUpAndSends = PostgresMigration(
        "account-11-slp-sign-up-and-sends",
        [
            """
            CREATE TABLE slp_used_ticket (
                ticket_hash bytea PRIMARY KEY,
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                expires_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX slp_used_ticket_user ON slp_used_ticket (user_id)",
            """
            CREATE TABLE phone_send_throttle (
                key bytea PRIMARY KEY,
                window_started_at_ms bigint NOT NULL,
                sends bigint NOT NULL,
                last_sent_at_ms bigint NOT NULL,
                locked_until_ms bigint NOT NULL DEFAULT 0
            )
            """,
        ])
}
