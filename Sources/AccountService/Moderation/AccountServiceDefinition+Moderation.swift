import ServiceRuntime

/// How the AccountService process sets up moderation (docs/platform.md, "Moderation").
extension AccountServiceDefinition {
    /// Reports, inquiries and suspensions of every app (`yedi.moderation.Moderation`), on `kit`: the
    /// process's one handler kit.
    static func moderation(_ env: ServiceEnvironment, kit: HandlerKit) -> ModerationHandlers {
        ModerationHandlers(store: moderationStore(env), kit: kit)
    }
}
