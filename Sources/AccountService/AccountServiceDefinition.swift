import AccessTokens
import GRDB
import OutsideSenders
import RPCCore
import ServiceRuntime
import YediCrypto
import YediProto

/// AccountService: users, designers and their shops, sessions (it issues the access tokens), follows,
/// designer search and recent searches, and account deletion across every service.
enum AccountServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "account", port: 7001, metricsPort: 9101, peers: ["content", "booking", "chat"])
    static let summary = "Yedi AccountService: users, designers, sessions, follows and search, over TLS."
    static let issuesTokens = true

    static func migrate(_ migrator: inout DatabaseMigrator) {
        AccountSchema.migrate(&migrator)
        ModerationSchema.migrate(&migrator)
        SlpSchema.migrate(&migrator)
        HousetainerSchema.migrate(&migrator)
        ZipadooSchema.migrate(&migrator)
        HousetainerSchema.migrateIssuedCodes(&migrator)
    }

    /// The same versions on PostgreSQL, in the same order (`AccountPostgresSchemaTests` compares them).
    static let postgresMigrations: [PostgresMigration]? =
        RuntimePostgresSchema.migrations + AccountPostgresSchema.migrations + ModerationPostgresSchema.migrations
        + SlpPostgresSchema.migrations + [HousetainerPostgresSchema.members] + ZipadooPostgresSchema.migrations
        + [HousetainerPostgresSchema.issuedCodes]

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        let account = try await handlers(env, passwords: PasswordHasher(), providers: providerVerifiers(env))
        return services(env, account: account)
    }

    /// Every service the process hosts: the accounts, their identities, users' devices and inboxes beside
    /// them, moderation, SLP's matching, Housetainer's members and Zipadoo's friends, all on the accounts'
    /// handler kit.
    static func services(_ env: ServiceEnvironment, account: AccountHandlers) -> [any RPCService] {
        [
            account, account.identityHandlers, notificationHandlers(env, kit: account.kit),
            moderation(env, kit: account.kit), slp(env, account: account),
            housetainerMembers(env, account: account), zipadoo(env, account: account),
        ]
    }

    /// Mails SignUp sends one address per hour (docs/account.md, "Sign-up").
    static let mailsPerRecipient = RateLimit(burst: 5, period: .seconds(3_600))

    /// The handlers on `env`; tests pass a cheaper password hasher (and may fix the mailed and texted
    /// codes, and the providers' verifiers).
    static func handlers(
        _ env: ServiceEnvironment, passwords: PasswordHasher,
        codes: any VerificationCodeGenerator = RandomVerificationCodes(),
        providers: [String: any IdentityVerifier] = [:]
    ) async throws -> AccountHandlers {
        guard let signingKey = env.tokenSigningKey else {
            throw ConfigurationError(option: "--token-signing-key (YEDI_TOKEN_SIGNING_KEY)", problem: "required")
        }
        let clock = env.clock
        let peers = env.peers
        let store = accountStore(env)
        env.addBackgroundService(sessionPruning(env, store: store))
        let developmentFolders = try OutsideSenderSetup.register(on: env).map {
            try env.dataFolder($0.developmentFolder)
        }
        let credentials = Credentials(
            passwords: passwords,
            decoyHash: try await passwords.hash(Base64URL.encode(SecureRandom.bytes(16))),
            sessions: SessionIssuer(
                tokens: AccessTokenIssuer(signingKey: signingKey, now: { clock.now }), clock: clock, ids: env.ids),
            throttle: SignInThrottle(),
            signInLimits: ClientRateLimits(
                perAddress: env.configuration.signInRatePerAddress,
                perConnection: env.configuration.signInRatePerConnection),
            refreshLimits: ClientRateLimits(
                perAddress: env.configuration.signInRatePerAddress.scaled(by: 10),
                perConnection: env.configuration.signInRatePerConnection.scaled(by: 10)))
        var handlers = AccountHandlers(
            store: store,
            credentials: credentials,
            mailer: CodeMailer(codes: codes, mailsPerRecipient: SharedRateLimiter(limit: mailsPerRecipient)),
            identity: IdentitySignIn(
                verifier: IdentityVerifiers(
                    apps: env.apps, phone: PhoneCodeVerifier(store: store, clock: clock),
                    provider: DevelopmentIdentityVerifier(
                        enabled: env.configuration.development, next: ProviderVerifiers(verifiers: providers))),
                codes: codes, apps: env.apps),
            reviews: { designerIDs in
                let content = YediContent.ContentService.Client(try peers.client(for: "content"))
                let answer = try await content.getReviewSummaries(
                    .init(designerIDs: designerIDs), options: CallOptions(timeout: .seconds(2)))
                return Dictionary(
                    answer.summaries.map {
                        (
                            $0.designerID,
                            YediAccount.ReviewSummary(
                                rating: $0.rating, reviewCount: $0.reviewCount, keywordCounts: $0.keywordCounts)
                        )
                    },
                    uniquingKeysWith: { first, _ in first })
            },
            kit: env.makeHandlerKit(directoryLookup: { ids in
                try await AccountHandlers.publicUsers(ids, store: store)
            })
        )
        handlers.forgetSentMessages = { recipients, mentions in
            for folder in developmentFolders {
                DevelopmentFileSender.forget(recipients, mentioning: mentions, in: folder)
            }
        }
        return handlers
    }

    /// How often dead sessions and expired sign-ups are pruned (and once at start).
    static let pruningPeriod: Duration = .seconds(3_600)

    /// Deletes session rows expired or revoked longer than `--retention sessions.dead` ago (24 h), and
    /// sign-ups, phone verifications and sign-up tickets that expired as long ago.
    static func sessionPruning(_ env: ServiceEnvironment, store: any AccountStore) -> PeriodicJob {
        let clock = env.clock
        let retention = env.configuration.retention.deadSessions
        return PeriodicJob(name: "session-pruning", period: pruningPeriod, logger: env.logger) {
            let cutoff = clock.nowMilliseconds - retention
            return try await store.pruneSessions(deadBefore: cutoff) + store.pruneSignUps(expiredBefore: cutoff)
                + store.pruneIdentityVerifications(expiredBefore: cutoff)
        }
    }
}
