import ServiceRuntime

/// Registers a service's outside senders on its outbox, from its configuration
/// (`env.configuration.senders`): the real adapter of each kind that has a provider configured, the
/// development files (`<data>/sent-<kind>`) otherwise, said in the log outside development mode, where
/// nobody would read them.
public enum OutsideSenderSetup {
    /// Registers a sender for each of `kinds`; returns the kinds that go to development files.
    @discardableResult
    public static func register(
        _ kinds: Set<OutsideMessageKind> = Set(OutsideMessageKind.allCases), on env: ServiceEnvironment
    ) throws -> Set<OutsideMessageKind> {
        var development: Set<OutsideMessageKind> = []
        for kind in OutsideMessageKind.allCases where kinds.contains(kind) && !registerProvider(of: kind, on: env) {
            let files = try DevelopmentFileSender(kind, in: env)
            switch kind {
            case .mail: env.outbox.register(files as any MailSender)
            case .sms: env.outbox.register(files as any SmsSender)
            case .push: env.outbox.register(files as any PushSender)
            }
            development.insert(kind)
            if !env.configuration.development {
                env.logger.warning(
                    "\(kind.rawValue): no provider is configured; messages are written to files, not sent",
                    metadata: ["folder": "\(files.folder.path)"])
            }
        }
        return development
    }

    /// Registers the real adapter of `kind` when its provider is configured; false when it is not.
    private static func registerProvider(of kind: OutsideMessageKind, on env: ServiceEnvironment) -> Bool {
        let settings = env.configuration.senders
        switch kind {
        case .mail:
            guard let api = settings.mail else { return false }
            env.outbox.register(
                SendGridMailSender(url: api.url, apiKey: api.apiKey, from: api.from, logger: env.logger))
        case .sms:
            guard let api = settings.sms else { return false }
            env.outbox.register(
                NHNCloudSmsSender(
                    url: api.url, appKey: api.appKey, secretKey: api.secretKey, senderNumber: api.senderNumber,
                    logger: env.logger))
        case .push:
            guard let api = settings.push else { return false }
            let credential: FCMCredential =
                switch api.credential {
                case .accessToken(let source): .accessToken(source)
                case .serviceAccountKey(let key):
                    .serviceAccount(GoogleServiceAccountTokens(key: key, clock: env.clock))
                }
            env.outbox.register(
                FCMPushSender(url: api.url, project: api.project, credential: credential, logger: env.logger))
        }
        return true
    }
}
