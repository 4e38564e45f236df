import ServiceRuntime

/// HousetainerSchema's two versions on PostgreSQL, the same names, one statement per string. The
/// service's list puts Zipadoo's `account-11-zipadoo` between them, as SQLite's migrator registers them.
///
/// Differences from SQLite, each for the other engine: `app_user` for `user`; `invited` is a `boolean`;
/// the trigger that forgets a deleted member's address is a trigger function; the second version relaxes
/// the table in place (SQLite rebuilt it). The constraints the store tells apart by name are named here
/// (`housetainer_invitation_code`, the one a colliding draw hits). An index on the invitee's address
/// serves that trigger, which SQLite runs as a scan.
enum HousetainerPostgresSchema {
    /// Issue 29. Every row goes with its account (ON DELETE CASCADE): a deleted member's invitations, the
    /// invitation that brought them in (its slot freed), their terms; and by trigger whatever names their
    /// address. A deleted inviter leaves `inviter_id` NULL with `invited` true: the inviter "left".
    static let members = PostgresMigration(
        "account-housetainer-1",
        [
            """
            CREATE TABLE housetainer_member (
                user_id text PRIMARY KEY REFERENCES app_user(id) ON DELETE CASCADE,
                app text NOT NULL,
                type text NOT NULL DEFAULT 'a' CHECK (type IN ('H', 'h', 'a')),
                inviter_id text REFERENCES app_user(id) ON DELETE SET NULL,
                invited boolean NOT NULL,
                created_at_ms bigint NOT NULL
            )
            """,
            "CREATE INDEX housetainer_member_inviter ON housetainer_member (inviter_id)",
            """
            CREATE TABLE housetainer_invitation (
                id text PRIMARY KEY,
                app text NOT NULL,
                code text NOT NULL CHECK (length(code) = 8),
                inviter_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                invitee_email text NOT NULL,
                invitee_name text NOT NULL,
                status text NOT NULL CHECK (status IN ('S', 'J')),
                created_at_ms bigint NOT NULL,
                joined_user_id text REFERENCES app_user(id) ON DELETE CASCADE,
                joined_at_ms bigint,
                CONSTRAINT housetainer_invitation_code UNIQUE (app, code)
            )
            """,
            "CREATE INDEX housetainer_invitation_inviter ON housetainer_invitation (inviter_id, created_at_ms)",
            "CREATE INDEX housetainer_invitation_joined ON housetainer_invitation (joined_user_id)",
            "CREATE INDEX housetainer_invitation_invitee ON housetainer_invitation (app, invitee_email)",
            """
            CREATE TABLE housetainer_terms (
                user_id text NOT NULL REFERENCES app_user(id) ON DELETE CASCADE,
                kind text NOT NULL,
                version text NOT NULL,
                accepted_at_ms bigint NOT NULL,
                PRIMARY KEY (user_id, kind)
            )
            """,
            """
            CREATE TABLE housetainer_waitlist (
                app text NOT NULL,
                email text NOT NULL,
                sns_url text NOT NULL,
                instagram_id text NOT NULL,
                created_at_ms bigint NOT NULL,
                updated_at_ms bigint NOT NULL,
                PRIMARY KEY (app, email)
            )
            """,
            "CREATE INDEX housetainer_waitlist_newest ON housetainer_waitlist (app, created_at_ms, email)",
            // A deleted account's address: its waitlist entry and the unused codes sent to it go too.
            """
            CREATE FUNCTION housetainer_forget_address() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                DELETE FROM housetainer_waitlist WHERE app = OLD.app AND email = OLD.email;
                DELETE FROM housetainer_invitation
                WHERE app = OLD.app AND invitee_email = OLD.email AND status = 'S';
                RETURN NULL;
            END
            $$
            """,
            """
            CREATE TRIGGER housetainer_forget_address AFTER DELETE ON app_user
                FOR EACH ROW WHEN (OLD.email IS NOT NULL) EXECUTE FUNCTION housetainer_forget_address()
            """,
        ])

    /// Issue 29, the first members: codes an admin issues have no inviter (`inviter_id` NULL, the admin in
    /// `issued_by`); a CHECK keeps exactly one of the two set. The trigger names no column that changes,
    /// so it stays.
    static let issuedCodes = PostgresMigration(
        "account-housetainer-2-issued-codes",
        [
            "ALTER TABLE housetainer_invitation ALTER COLUMN inviter_id DROP NOT NULL",
            "ALTER TABLE housetainer_invitation ADD COLUMN issued_by text",
            """
            ALTER TABLE housetainer_invitation ADD CONSTRAINT housetainer_invitation_issuer
                CHECK ((inviter_id IS NULL) = (issued_by IS NOT NULL))
            """,
        ])
}
