import ServiceRuntime

/// How the AccountService process hosts Zipadoo's friends (docs/zipadoo.md): beside the users they pair,
/// on the accounts' handlers (credentials, limits) and kit.
extension AccountServiceDefinition {
    static func zipadoo(_ env: ServiceEnvironment, account: AccountHandlers) -> ZipadooFriendsHandlers {
        ZipadooFriendsHandlers(
            store: SQLiteZipadooFriendStore(
                accounts: SQLiteAccountStore(
                    database: env.database, events: AccountEvents(outbox: env.outbox),
                    revokedUsers: env.revokedUsers)),
            account: account)
    }
}
