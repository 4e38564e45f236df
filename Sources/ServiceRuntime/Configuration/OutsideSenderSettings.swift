import Foundation

/// Which real providers a service's outside senders use (docs/platform.md, "Outside senders"); a kind
/// left nil goes to `DevelopmentFileSender`'s files. Read from `--mail-api-url` & co.; the credentials
/// from a file (`--mail-api-key-file`) or the environment (`YEDI_MAIL_API_KEY`), never from a flag
/// (a flag shows in `ps`): a file is read at each use, so rewriting it rotates the key without a restart.
public struct OutsideSenderSettings: Sendable {
    /// SendGrid's v3 mail API.
    public struct MailAPI: Sendable {
        /// Base URL (`https://api.sendgrid.com`; a test points it at a local fake).
        public var url: String
        public var apiKey: SecretSource
        /// The sender's address (`no-reply@yedi.kr`).
        public var from: String
    }

    /// NHN Cloud's SMS API v3.0.
    public struct SmsAPI: Sendable {
        /// Base URL (`https://api-sms.cloud.toast.com`).
        public var url: String
        /// The project's app key (part of the URL path; not a secret, but not logged either).
        public var appKey: String
        /// The `X-Secret-Key` header.
        public var secretKey: SecretSource
        /// The registered sending number (`0215441234`).
        public var senderNumber: String
    }

    /// Firebase Cloud Messaging's HTTP v1 API.
    public struct PushAPI: Sendable {
        /// Base URL (`https://fcm.googleapis.com`).
        public var url: String
        /// The Firebase project id.
        public var project: String
        /// Where the OAuth 2.0 access token (scope firebase.messaging) comes from.
        public var credential: PushCredential
    }

    /// FCM's credential: a service-account key the service mints hour-long access tokens from (the
    /// usual way), or an access token an operator's job keeps fresh.
    public enum PushCredential: Sendable {
        /// The service-account key's JSON (`--push-service-account-file`, or `YEDI_PUSH_SERVICE_ACCOUNT`).
        case serviceAccountKey(SecretSource)
        /// `--push-access-token-file`, or `YEDI_PUSH_ACCESS_TOKEN`.
        case accessToken(SecretSource)
    }

    public var mail: MailAPI?
    public var sms: SmsAPI?
    public var push: PushAPI?

    /// Every kind to its development files.
    public static let development = OutsideSenderSettings()

    public init(mail: MailAPI? = nil, sms: SmsAPI? = nil, push: PushAPI? = nil) {
        self.mail = mail
        self.sms = sms
        self.push = push
    }

    static func resolve(_ options: ServiceOptions, reader: OptionReader) throws(ConfigurationError) -> Self {
        var settings = OutsideSenderSettings()
        if let url = try reader.url(options.mailApiUrl, flag: "mail-api-url") {
            settings.mail = MailAPI(
                url: url,
                apiKey: try reader.secret(options.mailApiKeyFile, fileFlag: "mail-api-key-file", for: "mail-api-url"),
                from: try reader.required(options.mailFrom, flag: "mail-from", for: "mail-api-url"))
        }
        if let url = try reader.url(options.smsApiUrl, flag: "sms-api-url") {
            settings.sms = SmsAPI(
                url: url,
                appKey: try reader.required(options.smsAppKey, flag: "sms-app-key", for: "sms-api-url"),
                secretKey: try reader.secret(options.smsApiKeyFile, fileFlag: "sms-api-key-file", for: "sms-api-url"),
                senderNumber: try reader.required(
                    options.smsSenderNumber, flag: "sms-sender-number", for: "sms-api-url"))
        }
        if let url = try reader.url(options.pushApiUrl, flag: "push-api-url") {
            settings.push = PushAPI(
                url: url,
                project: try reader.required(options.pushProject, flag: "push-project", for: "push-api-url"),
                credential: try pushCredential(options, reader: reader))
        }
        return settings
    }
}

extension OutsideSenderSettings {
    /// A service-account key when one is given (flag, file variable or the key itself in the
    /// environment), else an access token; both at once is refused, as the operator meant one of them.
    private static func pushCredential(_ options: ServiceOptions, reader: OptionReader) throws(ConfigurationError)
        -> PushCredential
    {
        let keyFlag = "push-service-account-file"
        let tokenFlag = "push-access-token-file"
        let givesKey =
            reader.raw(options.pushServiceAccountFile, flag: keyFlag)?.isEmpty == false
            || reader.environment["YEDI_PUSH_SERVICE_ACCOUNT"]?.isEmpty == false
        let givesToken =
            reader.raw(options.pushAccessTokenFile, flag: tokenFlag)?.isEmpty == false
            || reader.environment["YEDI_PUSH_ACCESS_TOKEN"]?.isEmpty == false
        if givesKey && givesToken {
            throw reader.error(keyFlag, "give a service-account key or an access token (--\(tokenFlag)), not both")
        }
        if givesToken {
            return .accessToken(
                try reader.secret(options.pushAccessTokenFile, fileFlag: tokenFlag, for: "push-api-url"))
        }
        return .serviceAccountKey(
            try reader.secret(options.pushServiceAccountFile, fileFlag: keyFlag, for: "push-api-url"))
    }
}

extension OptionReader {
    /// An `http` or `https` URL with a host, without a trailing slash; nil when the option is unset.
    func url(_ value: String?, flag: String) throws(ConfigurationError) -> String? {
        guard let text = raw(value, flag: flag), !text.isEmpty else { return nil }
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false, url.query == nil
        else { throw error(flag, "\"\(text)\" is not an http(s) URL such as https://api.example.com") }
        return text.hasSuffix("/") ? String(text.dropLast()) : text
    }

    /// A value another option (`dependent`) needs.
    func required(_ value: String?, flag: String, for dependent: String) throws(ConfigurationError) -> String {
        guard let text = raw(value, flag: flag), !text.isEmpty else {
            throw error(flag, "required with --\(dependent)")
        }
        return text
    }

    /// A credential: the variable named after the file flag without `_FILE` (`YEDI_MAIL_API_KEY`) holds
    /// it, else the file that `--<fileFlag>` (or its variable) names does, checked readable now and read
    /// again at each use. The error never quotes the value.
    func secret(_ file: String?, fileFlag: String, for dependent: String) throws(ConfigurationError) -> SecretSource {
        let variable = String(Self.variable(fileFlag).dropLast("_FILE".count))
        if let value = environment[variable]?.trimmingCharacters(in: .whitespacesAndNewlines), !value.isEmpty {
            return .value(Secret(value))
        }
        guard let path = raw(file, flag: fileFlag), !path.isEmpty else {
            throw error(fileFlag, "required with --\(dependent) (or the credential itself in \(variable))")
        }
        do {
            _ = try SecretSource.file(path).read()
        } catch {
            throw self.error(fileFlag, "\(error)")
        }
        return .file(path)
    }
}
