import ServiceRuntime

/// How the AccountService process hosts Housetainer's members (docs/housetainer.md): beside the accounts
/// a signup creates, on the accounts' handler kit, sessions and identity seam.
extension AccountServiceDefinition {
    static func housetainerMembers(
        _ env: ServiceEnvironment, account: AccountHandlers, codes: any InvitationCodeSource = SecureInvitationCodes()
    ) -> HousetainerMembersHandlers {
        HousetainerMembersHandlers(account: account, store: housetainerStore(env), codes: codes)
    }
}
