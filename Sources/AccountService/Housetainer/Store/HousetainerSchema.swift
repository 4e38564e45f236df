import GRDB

/// Housetainer's member tables (docs/housetainer.md), in AccountService's database beside the accounts
/// they extend: a signup creates the account, turns the code J and records the inviter in one
/// transaction. The nickname, address, gender and birthday are the account's own columns (`user`).
enum HousetainerSchema {
    static func migrate(_ migrator: inout DatabaseMigrator) {
        // Issue 29. Every row goes with its account (ON DELETE CASCADE): a deleted member's invitations
        // (any status), the invitation that brought them in (its slot freed), their terms; and by trigger
        // whatever names their address (their waitlist entry, unused codes sent to it). A deleted
        // inviter leaves `inviter_id` NULL with `invited` 1: the inviter "left". Expiry is not stored: an
        // S code is expired when it is older than the app's `invite_code_days`, decided at read.
        migrator.registerMigration("account-housetainer-1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE housetainer_member (
                        user_id TEXT PRIMARY KEY NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        app TEXT NOT NULL,
                        type TEXT NOT NULL DEFAULT 'a' CHECK (type IN ('H', 'h', 'a')),
                        inviter_id TEXT REFERENCES user(id) ON DELETE SET NULL,
                        invited INTEGER NOT NULL,
                        created_at_ms INTEGER NOT NULL
                    );
                    CREATE INDEX housetainer_member_inviter ON housetainer_member(inviter_id);
                    CREATE TABLE housetainer_invitation (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        code TEXT NOT NULL CHECK (length(code) = 8),
                        inviter_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        invitee_email TEXT NOT NULL,
                        invitee_name TEXT NOT NULL,
                        status TEXT NOT NULL CHECK (status IN ('S', 'J')),
                        created_at_ms INTEGER NOT NULL,
                        joined_user_id TEXT REFERENCES user(id) ON DELETE CASCADE,
                        joined_at_ms INTEGER,
                        UNIQUE (app, code)
                    );
                    CREATE INDEX housetainer_invitation_inviter ON housetainer_invitation(inviter_id, created_at_ms);
                    CREATE INDEX housetainer_invitation_joined ON housetainer_invitation(joined_user_id);
                    CREATE TABLE housetainer_terms (
                        user_id TEXT NOT NULL REFERENCES user(id) ON DELETE CASCADE,
                        kind TEXT NOT NULL,
                        version TEXT NOT NULL,
                        accepted_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (user_id, kind)
                    );
                    CREATE TABLE housetainer_waitlist (
                        app TEXT NOT NULL,
                        email TEXT NOT NULL,
                        sns_url TEXT NOT NULL,
                        instagram_id TEXT NOT NULL,
                        created_at_ms INTEGER NOT NULL,
                        updated_at_ms INTEGER NOT NULL,
                        PRIMARY KEY (app, email)
                    );
                    CREATE INDEX housetainer_waitlist_newest ON housetainer_waitlist(app, created_at_ms, email);
                    CREATE TRIGGER housetainer_forget_address AFTER DELETE ON user WHEN old.email IS NOT NULL
                    BEGIN
                        DELETE FROM housetainer_waitlist WHERE app = old.app AND email = old.email;
                        DELETE FROM housetainer_invitation
                        WHERE app = old.app AND invitee_email = old.email AND status = 'S';
                    END;
                    """)
        }
    }

    /// Issue 29, the first members: codes an admin issues (`Members/IssueInvitation`) have no inviter
    /// (`inviter_id` NULL, the admin in `issued_by`), so a community that requires codes can start. SQLite
    /// cannot drop a NOT NULL, so the table is rebuilt (rows, indexes, and the trigger that names it).
    static func migrateIssuedCodes(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("account-housetainer-2-issued-codes") { db in
            try db.execute(
                sql: """
                    DROP TRIGGER housetainer_forget_address;
                    CREATE TABLE housetainer_invitation_new (
                        id TEXT PRIMARY KEY NOT NULL,
                        app TEXT NOT NULL,
                        code TEXT NOT NULL CHECK (length(code) = 8),
                        inviter_id TEXT REFERENCES user(id) ON DELETE CASCADE,
                        issued_by TEXT,
                        invitee_email TEXT NOT NULL,
                        invitee_name TEXT NOT NULL,
                        status TEXT NOT NULL CHECK (status IN ('S', 'J')),
                        created_at_ms INTEGER NOT NULL,
                        joined_user_id TEXT REFERENCES user(id) ON DELETE CASCADE,
                        joined_at_ms INTEGER,
                        UNIQUE (app, code),
                        CHECK ((inviter_id IS NULL) = (issued_by IS NOT NULL))
                    );
                    INSERT INTO housetainer_invitation_new
                        (id, app, code, inviter_id, issued_by, invitee_email, invitee_name, status, created_at_ms,
                        joined_user_id, joined_at_ms)
                    SELECT id, app, code, inviter_id, NULL, invitee_email, invitee_name, status, created_at_ms,
                        joined_user_id, joined_at_ms
                    FROM housetainer_invitation;
                    DROP TABLE housetainer_invitation;
                    ALTER TABLE housetainer_invitation_new RENAME TO housetainer_invitation;
                    CREATE INDEX housetainer_invitation_inviter ON housetainer_invitation(inviter_id, created_at_ms);
                    CREATE INDEX housetainer_invitation_joined ON housetainer_invitation(joined_user_id);
                    CREATE TRIGGER housetainer_forget_address AFTER DELETE ON user WHEN old.email IS NOT NULL
                    BEGIN
                        DELETE FROM housetainer_waitlist WHERE app = old.app AND email = old.email;
                        DELETE FROM housetainer_invitation
                        WHERE app = old.app AND invitee_email = old.email AND status = 'S';
                    END;
                    """)
        }
    }
}
