import ServiceRuntime

/// AccountSchema's versions on PostgreSQL: the same names in the same order (docs/postgres.md,
/// "Migrations"), one statement per string. The service's full list interleaves these with the other
/// stores' versions (`account-8-moderation`, `account-10-slp`, …) exactly as `AccountServiceDefinition`
/// registers their SQLite siblings, after `RuntimePostgresSchema.migrations`.
///
/// Differences from SQLite, each for the other engine: the users table is `app_user` (`user` is a reserved
/// word); designer search is three `pg_trgm` GIN indexes on `lower(…)` instead of an FTS5 table (so the
/// designer row needs no integer id); recent searches and devices keep their insertion order in `seq`
/// (SQLite breaks ties by `rowid`); flags are `boolean`, blobs `bytea`, integers `bigint`. Constraints the
/// store tells apart by name are named here.
enum AccountPostgresSchema {
    static let migrations: [PostgresMigration] = [
        accountOne, passwordAttempts, sessionPruning, pendingSignUps, apps, identities, devicesAndInbox,
        passwordResets,
    ]

    static let accountOne = PostgresMigration(
        "account-1",
        [
            // Trigram indexes for substring search in any script (Korean included). A trusted extension
            // since PostgreSQL 13: the database's owner may create it.
            "CREATE EXTENSION IF NOT EXISTS pg_trgm",
            """
            CREATE TABLE app_user (
                id text PRIMARY KEY,
                role text NOT NULL,
                app text NOT NULL DEFAULT 'yedi',
                email text NOT NULL CONSTRAINT app_user_email_key UNIQUE,
                name text NOT NULL,
                phone text NOT NULL,
                gender bigint NOT NULL,
                birth_year bigint, birth_month bigint, birth_day bigint,
                profile_image_id text NOT NULL DEFAULT '',
                favourite_style text NOT NULL DEFAULT '',
                password_hash text NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            """
            CREATE TABLE designer (
                user_id text PRIMARY KEY REFERENCES app_user(id) ON DELETE CASCADE,
                description text NOT NULL,
                skills text NOT NULL,
                rank bigint NOT NULL,
                follower_count bigint NOT NULL DEFAULT 0 CHECK (follower_count >= 0),
                shop_name text NOT NULL,
                shop_phone text NOT NULL,
                city text NOT NULL,
                district text NOT NULL,
                detail text NOT NULL,
                latitude double precision NOT NULL,
                longitude double precision NOT NULL,
                opening_hour bigint NOT NULL,
                closing_hour bigint NOT NULL,
                messenger_links text NOT NULL,
                time_zone text NOT NULL
            )
            """,
            """
            CREATE TABLE session (
                id text PRIMARY KEY,
                family_id text NOT NULL,
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                refresh_hash bytea NOT NULL UNIQUE,
                created_at_ms bigint NOT NULL,
                expires_at_ms bigint NOT NULL,
                used_at_ms bigint,
                revoked_at_ms bigint
            )
            """,
            "CREATE INDEX session_by_family ON session (family_id)",
            "CREATE INDEX session_by_user ON session (user_id)",
            // Dropped by account-2, as on SQLite: kept so that every version means the same on both engines.
            """
            CREATE TABLE sign_in_throttle (
                key text PRIMARY KEY,
                failures bigint NOT NULL,
                window_started_at_ms bigint NOT NULL,
                locked_until_ms bigint NOT NULL
            )
            """,
            // `follow_designer_exists` is how `follow` tells "no such designer" (a customer's id) apart.
            """
            CREATE TABLE follow (
                customer_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                designer_id text NOT NULL
                    CONSTRAINT follow_designer_exists REFERENCES designer(user_id) ON DELETE CASCADE,
                followed_at_ms bigint NOT NULL,
                PRIMARY KEY (customer_id, designer_id)
            )
            """,
            "CREATE INDEX follow_by_customer ON follow (customer_id, followed_at_ms DESC, designer_id DESC)",
            "CREATE INDEX follow_by_designer ON follow (designer_id)",
            // `seq`: the insertion order that breaks ties of `searched_at_ms` (SQLite's rowid); an upsert
            // keeps it, as it keeps a rowid.
            """
            CREATE TABLE recent_search (
                id text PRIMARY KEY,
                seq bigint GENERATED ALWAYS AS IDENTITY,
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                kind text NOT NULL,
                value text NOT NULL,
                searched_at_ms bigint NOT NULL,
                UNIQUE (user_id, kind, value)
            )
            """,
            "CREATE INDEX recent_search_by_user ON recent_search (user_id, searched_at_ms DESC, seq DESC)",
            "CREATE INDEX recent_search_by_value ON recent_search (kind, value)",
            // Designer search: substrings of three characters or more, case-insensitive, by trigrams.
            "CREATE INDEX designer_search_name ON app_user USING gin (lower(name) gin_trgm_ops)",
            "CREATE INDEX designer_search_shop_name ON designer USING gin (lower(shop_name) gin_trgm_ops)",
            "CREATE INDEX designer_search_district ON designer USING gin (lower(district) gin_trgm_ops)",
        ])

    /// Sign-in failures per (account, client address); `address` '' is the account's backstop.
    static let passwordAttempts = PostgresMigration(
        "account-2-password-attempts",
        [
            """
            CREATE TABLE password_attempt (
                account text NOT NULL,
                address text NOT NULL,
                failures bigint NOT NULL,
                window_started_at_ms bigint NOT NULL,
                locked_until_ms bigint NOT NULL,
                known boolean NOT NULL DEFAULT false,
                PRIMARY KEY (account, address)
            )
            """,
            "CREATE INDEX password_attempt_stale ON password_attempt (known, window_started_at_ms)",
            "DROP TABLE sign_in_throttle",
        ])

    static let sessionPruning = PostgresMigration(
        "account-3-session-pruning",
        [
            "CREATE INDEX session_by_expiry ON session (expires_at_ms)",
            "CREATE INDEX session_by_revocation ON session (revoked_at_ms) WHERE revoked_at_ms IS NOT NULL",
        ])

    static let pendingSignUps = PostgresMigration(
        "account-4-pending-sign-ups",
        [
            """
            CREATE TABLE pending_sign_up (
                id text PRIMARY KEY,
                email text NOT NULL,
                request bytea NOT NULL,
                password_hash text NOT NULL,
                code_hash bytea NOT NULL,
                attempts bigint NOT NULL DEFAULT 0,
                expires_at_ms bigint NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX pending_sign_up_by_expiry ON pending_sign_up (expires_at_ms)",
        ])

    /// Apps as tenants: addresses unique per app, accounts without address or password, nicknames unique
    /// per app (case-insensitively: `lower`, where SQLite's NOCASE folds ASCII only). PostgreSQL drops the
    /// constraints in place; SQLite rebuilt the table.
    static let apps = PostgresMigration(
        "account-5-apps",
        [
            "ALTER TABLE app_user DROP CONSTRAINT app_user_email_key",
            "ALTER TABLE app_user ALTER COLUMN email DROP NOT NULL",
            "ALTER TABLE app_user ALTER COLUMN password_hash DROP NOT NULL",
            "ALTER TABLE app_user ADD COLUMN nickname text",
            "CREATE UNIQUE INDEX app_user_email_in_app ON app_user (app, email) WHERE email IS NOT NULL",
            """
            CREATE UNIQUE INDEX app_user_nickname_in_app ON app_user (app, lower(nickname))
                WHERE nickname IS NOT NULL
            """,
            "ALTER TABLE pending_sign_up ADD COLUMN app text NOT NULL DEFAULT 'yedi'",
        ])

    /// Verified identities, phone codes and sign-up tickets. `user_identity_key` is how a second account
    /// for one identity is told apart.
    static let identities = PostgresMigration(
        "account-6-identities",
        [
            """
            CREATE TABLE user_identity (
                app text NOT NULL,
                kind text NOT NULL,
                subject text NOT NULL,
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                created_at_ms bigint NOT NULL,
                CONSTRAINT user_identity_key PRIMARY KEY (app, kind, subject)
            )
            """,
            "CREATE INDEX user_identity_by_user ON user_identity (user_id)",
            """
            CREATE TABLE phone_verification (
                id text PRIMARY KEY,
                app text NOT NULL,
                phone text NOT NULL,
                code_hash bytea NOT NULL,
                attempts bigint NOT NULL DEFAULT 0,
                expires_at_ms bigint NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX phone_verification_by_expiry ON phone_verification (expires_at_ms)",
            """
            CREATE TABLE sign_up_ticket (
                ticket_hash bytea PRIMARY KEY,
                app text NOT NULL,
                kind text NOT NULL,
                subject text NOT NULL,
                email text,
                expires_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX sign_up_ticket_by_expiry ON sign_up_ticket (expires_at_ms)",
        ])

    /// Push devices and the notification inbox. `device.seq` is the insertion order the device quota
    /// breaks ties by (SQLite's rowid); `notification.seq` is the inbox's newest-first order.
    static let devicesAndInbox = PostgresMigration(
        "account-7-devices-and-inbox",
        [
            """
            CREATE TABLE device (
                id text PRIMARY KEY,
                seq bigint GENERATED ALWAYS AS IDENTITY,
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                app text NOT NULL,
                platform text NOT NULL,
                token text NOT NULL,
                session_family_id text NOT NULL,
                registered_at_ms bigint NOT NULL,
                UNIQUE (app, token)
            )
            """,
            "CREATE INDEX device_by_user ON device (user_id, app, registered_at_ms)",
            "CREATE INDEX device_by_session_family ON device (session_family_id)",
            "CREATE INDEX device_by_token ON device (token)",
            """
            CREATE TABLE notification (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                id text NOT NULL UNIQUE,
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                app text NOT NULL,
                kind text NOT NULL,
                title text NOT NULL,
                body text NOT NULL,
                data text NOT NULL,
                created_at_ms bigint NOT NULL,
                read_at_ms bigint
            )
            """,
            "CREATE INDEX notification_by_user ON notification (user_id, app, seq)",
            "CREATE INDEX notification_unread ON notification (user_id, app) WHERE read_at_ms IS NULL",
            "CREATE INDEX notification_by_time ON notification (created_at_ms)",
        ])

    /// YeDi's password reset by e-mail (one row per request, with no user when the address has no account).
    static let passwordResets = PostgresMigration(
        "account-9-password-resets",
        [
            """
            CREATE TABLE password_reset (
                id text PRIMARY KEY,
                app text NOT NULL,
                user_id text REFERENCES app_user(id) ON DELETE CASCADE,
                code_hash bytea NOT NULL,
                attempts bigint NOT NULL DEFAULT 0,
                expires_at_ms bigint NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX password_reset_by_expiry ON password_reset (expires_at_ms)",
            "CREATE INDEX password_reset_by_user ON password_reset (user_id)",
        ])
}
