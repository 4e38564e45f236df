import GRDB

/// AccountService's tables, one migration per schema version.
enum AccountSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("account-1") { db in
            // `role` is text and `app` names the app: sibling apps add kinds of accounts without a migration.
            try db.execute(
                sql: """
                    CREATE TABLE user (
                        id TEXT PRIMARY KEY,
                        role TEXT NOT NULL,
                        app TEXT NOT NULL DEFAULT 'yedi',
                        email TEXT NOT NULL UNIQUE,
                        name TEXT NOT NULL,
                        phone TEXT NOT NULL,
                        gender INTEGER NOT NULL,
                        birth_year INTEGER, birth_month INTEGER, birth_day INTEGER,
                        profile_image_id TEXT NOT NULL DEFAULT '',
                        favourite_style TEXT NOT NULL DEFAULT '',
                        password_hash TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    -- `id` is the designer's row in designer_search (its rowid): an INTEGER PRIMARY KEY, so
                    -- VACUUM can never renumber it and misalign the search index.
                    CREATE TABLE designer (
                        id INTEGER PRIMARY KEY,
                        user_id TEXT NOT NULL UNIQUE REFERENCES user(id) ON DELETE CASCADE,
                        description TEXT NOT NULL,
                        skills TEXT NOT NULL,
                        rank INTEGER NOT NULL,
                        follower_count INTEGER NOT NULL DEFAULT 0 CHECK (follower_count >= 0),
                        shop_name TEXT NOT NULL,
                        shop_phone TEXT NOT NULL,
                        city TEXT NOT NULL,
                        district TEXT NOT NULL,
                        detail TEXT NOT NULL,
                        latitude REAL NOT NULL,
                        longitude REAL NOT NULL,
                        opening_hour INTEGER NOT NULL,
                        closing_hour INTEGER NOT NULL,
                        messenger_links TEXT NOT NULL,
                        time_zone TEXT NOT NULL
                    );
                    CREATE TABLE session (
                        id TEXT PRIMARY KEY,
                        family_id TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        refresh_hash BLOB NOT NULL UNIQUE,
                        created_at_ms INTEGER NOT NULL,
                        expires_at_ms INTEGER NOT NULL,
                        used_at_ms INTEGER,
                        revoked_at_ms INTEGER
                    );
                    CREATE INDEX session_by_family ON session(family_id);
                    CREATE INDEX session_by_user ON session(user_id);
                    CREATE TABLE sign_in_throttle (
                        key TEXT PRIMARY KEY,
                        failures INTEGER NOT NULL,
                        window_started_at_ms INTEGER NOT NULL,
                        locked_until_ms INTEGER NOT NULL
                    );
                    CREATE TABLE follow (
                        customer_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        designer_id TEXT NOT NULL REFERENCES designer(user_id) ON DELETE CASCADE,
                        followed_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (customer_id, designer_id)
                    );
                    CREATE INDEX follow_by_customer ON follow(customer_id, followed_at_ms DESC, designer_id DESC);
                    CREATE INDEX follow_by_designer ON follow(designer_id);
                    CREATE TABLE recent_search (
                        id TEXT PRIMARY KEY,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        kind TEXT NOT NULL,
                        value TEXT NOT NULL,
                        searched_at_ms INTEGER NOT NULL,
                        UNIQUE (user_id, kind, value)
                    );
                    CREATE INDEX recent_search_by_user ON recent_search(user_id, searched_at_ms DESC);
                    CREATE INDEX recent_search_by_value ON recent_search(kind, value);
                    -- Substring search in any script (Korean included): trigrams, case-insensitive.
                    CREATE VIRTUAL TABLE designer_search USING fts5(
                        designer_id UNINDEXED, name, shop_name, district, tokenize = 'trigram'
                    );
                    """
            )
        }

        // Sign-in failures per (account, client address) instead of per email, so a stranger cannot lock
        // the owner out (`SignInThrottle`). `address` '' is the account's backstop row. The old per-email
        // counts are dropped: at most 15 minutes of lockout are forgotten once.
        migrator.registerMigration("account-2-password-attempts") { db in
            try db.execute(
                sql: """
                    CREATE TABLE password_attempt (
                        account TEXT NOT NULL,
                        address TEXT NOT NULL,
                        failures INTEGER NOT NULL,
                        window_started_at_ms INTEGER NOT NULL,
                        locked_until_ms INTEGER NOT NULL,
                        known INTEGER NOT NULL DEFAULT 0,
                        PRIMARY KEY (account, address)
                    ) WITHOUT ROWID;
                    CREATE INDEX password_attempt_stale ON password_attempt(known, window_started_at_ms);
                    DROP TABLE sign_in_throttle;
                    """
            )
        }

        // Issue 24: dead sessions (expired or revoked) are pruned by time; these indexes find them without
        // reading the live ones.
        migrator.registerMigration("account-3-session-pruning") { db in
            try db.execute(
                sql: """
                    CREATE INDEX session_by_expiry ON session(expires_at_ms);
                    CREATE INDEX session_by_revocation ON session(revoked_at_ms) WHERE revoked_at_ms IS NOT NULL;
                    """)
        }

        // Issue 24: sign-up waits for the code mailed to the address, so SignUp answers the same whether
        // or not the address has an account. One row per SignUp call (not per email): a stranger's
        // SignUp for your address cannot replace yours. Rows live 15 minutes, then are pruned.
        migrator.registerMigration("account-4-pending-sign-ups") { db in
            try db.execute(
                sql: """
                    CREATE TABLE pending_sign_up (
                        id TEXT PRIMARY KEY NOT NULL,
                        email TEXT NOT NULL,
                        request BLOB NOT NULL,
                        password_hash TEXT NOT NULL,
                        code_hash BLOB NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        expires_at_ms INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX pending_sign_up_by_expiry ON pending_sign_up(expires_at_ms);
                    """)
        }

        // Issue 26, apps as tenants: an account belongs to one app. The same address in two apps is two
        // accounts (unique per app, not overall); accounts that sign in by phone or a provider have no
        // address and no password; nicknames are unique per app, by index rather than by a lookup. SQLite
        // cannot drop a column constraint, so the table is rebuilt (foreign keys checked after).
        migrator.registerMigration("account-5-apps", foreignKeyChecks: .deferred) { db in
            try db.execute(
                sql: """
                    CREATE TABLE new_user (
                        id TEXT PRIMARY KEY,
                        role TEXT NOT NULL,
                        app TEXT NOT NULL DEFAULT 'yedi',
                        email TEXT,
                        name TEXT NOT NULL,
                        phone TEXT NOT NULL,
                        gender INTEGER NOT NULL,
                        birth_year INTEGER, birth_month INTEGER, birth_day INTEGER,
                        profile_image_id TEXT NOT NULL DEFAULT '',
                        favourite_style TEXT NOT NULL DEFAULT '',
                        password_hash TEXT,
                        created_at_ms INTEGER NOT NULL,
                        nickname TEXT
                    );
                    INSERT INTO new_user (id, role, app, email, name, phone, gender, birth_year, birth_month,
                        birth_day, profile_image_id, favourite_style, password_hash, created_at_ms)
                    SELECT id, role, app, email, name, phone, gender, birth_year, birth_month, birth_day,
                        profile_image_id, favourite_style, password_hash, created_at_ms FROM user;
                    DROP TABLE user;
                    ALTER TABLE new_user RENAME TO user;
                    CREATE UNIQUE INDEX user_email_in_app ON user(app, email) WHERE email IS NOT NULL;
                    CREATE UNIQUE INDEX user_nickname_in_app ON user(app, nickname COLLATE NOCASE)
                        WHERE nickname IS NOT NULL;
                    ALTER TABLE pending_sign_up ADD COLUMN app TEXT NOT NULL DEFAULT 'yedi';
                    """)
        }

        // Issue 26, verified identities: a phone number or a provider's account, linked to one account of
        // an app (the same number in two apps is two accounts); phone codes waiting to be typed back
        // (hashed, 5 minutes); sign-up tickets for an identity without an account (hashed, 10 minutes).
        migrator.registerMigration("account-6-identities") { db in
            try db.execute(
                sql: """
                    CREATE TABLE user_identity (
                        app TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        created_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (app, kind, subject)
                    );
                    CREATE INDEX user_identity_by_user ON user_identity(user_id);
                    CREATE TABLE phone_verification (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        phone TEXT NOT NULL,
                        code_hash BLOB NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        expires_at_ms INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX phone_verification_by_expiry ON phone_verification(expires_at_ms);
                    CREATE TABLE sign_up_ticket (
                        ticket_hash BLOB PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        subject TEXT NOT NULL,
                        email TEXT,
                        expires_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX sign_up_ticket_by_expiry ON sign_up_ticket(expires_at_ms);
                    """)
        }

        // Issue 26: push devices and the notification inbox live beside the user they belong to, so
        // sign-out (the session family's devices) and account deletion (ON DELETE CASCADE) remove them in
        // the same transaction. A token is one app's install on one device: unique per app, moved to
        // whoever registers it last. Notifications keep an autoincrement `seq` for newest-first paging.
        migrator.registerMigration("account-7-devices-and-inbox") { db in
            try db.execute(
                sql: """
                    CREATE TABLE device (
                        id TEXT PRIMARY KEY NOT NULL,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        app TEXT NOT NULL,
                        platform TEXT NOT NULL,
                        token TEXT NOT NULL,
                        session_family_id TEXT NOT NULL,
                        registered_at_ms INTEGER NOT NULL,
                        UNIQUE (app, token)
                    );
                    CREATE INDEX device_by_user ON device(user_id, app, registered_at_ms);
                    CREATE INDEX device_by_session_family ON device(session_family_id);
                    CREATE INDEX device_by_token ON device(token);
                    CREATE TABLE notification (
                        seq INTEGER PRIMARY KEY AUTOINCREMENT,
                        id TEXT NOT NULL UNIQUE,
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        app TEXT NOT NULL,
                        kind TEXT NOT NULL,
                        title TEXT NOT NULL,
                        body TEXT NOT NULL,
                        data TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        read_at_ms INTEGER
                    );
                    CREATE INDEX notification_by_user ON notification(user_id, app, seq);
                    CREATE INDEX notification_unread ON notification(user_id, app) WHERE read_at_ms IS NULL;
                    CREATE INDEX notification_by_time ON notification(created_at_ms);
                    """)
        }

        // Issue 26, YeDi's password reset by e-mail: a reset waits for its mailed code like a sign-up
        // (one row per request, code hashed, 15 minutes, 5 tries), with no user when the address has no
        // account. (`account-8-moderation` is ModerationSchema's; the two do not depend on each other.)
        migrator.registerMigration("account-9-password-resets") { db in
            try db.execute(
                sql: """
                    CREATE TABLE password_reset (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        user_id TEXT REFERENCES user(id) ON DELETE CASCADE,
                        code_hash BLOB NOT NULL,
                        attempts INTEGER NOT NULL DEFAULT 0,
                        expires_at_ms INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX password_reset_by_expiry ON password_reset(expires_at_ms);
                    CREATE INDEX password_reset_by_user ON password_reset(user_id);
                    """)
        }
    }
}
