import ServiceRuntime

/// How the AccountService process hosts Housetainer's members (docs/housetainer.md): beside the accounts
/// a signup creates, on the accounts' handler kit, sessions and identity seam.
extension AccountServiceDefinition {
    static func housetainerMembers(
        _ env: ServiceEnvironment, account: AccountHandlers, codes: any InvitationCodeSource = SecureInvitationCodes()
    ) -> HousetainerMembersHandlers {
        let events = AccountEvents(outbox: env.outbox)
        return HousetainerMembersHandlers(
            account: account,
            store: SQLiteHousetainerMemberStore(
                database: env.database,
                accounts: SQLiteAccountStore(database: env.database, events: events, revokedUsers: env.revokedUsers),
                events: events),
            codes: codes)
    }
}
