/// Which payment gateway BookingService uses and where its webhook listens (docs/payments.md,
/// "Configuration"). Unset, the development provider (`<data>/dev-payments`) takes every payment; a real
/// one is chosen by `--payment-api-url`, its secret key read like the outside senders' keys: from
/// `YEDI_PAYMENT_SECRET_KEY` or the file `--payment-secret-key-file` names, never from a flag.
public struct PaymentSettings: Sendable {
    /// Toss Payments' core API v1.
    public struct TossAPI: Sendable {
        /// Base URL (`https://api.tosspayments.com`; a test points it at a local fake).
        public var url: String
        /// The secret key, sent as HTTP basic auth (`secret:`).
        public var secretKey: SecretSource
        /// The client key the app's payment UI is opened with (public; said in `checkout_hint`).
        public var clientKey: String
    }

    public var toss: TossAPI?
    /// The webhook endpoint: off (nil port) unless configured; loopback unless told otherwise (a proxy
    /// in front terminates TLS).
    public var webhookHost: String = "127.0.0.1"
    public var webhookPort: Int?
    /// What the provider signs webhook bodies with (`YEDI_PAYMENT_WEBHOOK_SECRET` or
    /// `--payment-webhook-secret-file`); required with a webhook port.
    public var webhookSecret: SecretSource?
    /// The development provider's folder when it is not `<data>/dev-payments`: replicas share one, as they
    /// would share one real gateway (`--dev-payments-folder`).
    public var developmentFolder: String?

    public static let development = PaymentSettings()

    public init(
        toss: TossAPI? = nil, webhookHost: String = "127.0.0.1", webhookPort: Int? = nil,
        webhookSecret: SecretSource? = nil
    ) {
        self.toss = toss
        self.webhookHost = webhookHost
        self.webhookPort = webhookPort
        self.webhookSecret = webhookSecret
    }

    static func resolve(_ options: ServiceOptions, reader: OptionReader) throws(ConfigurationError) -> Self {
        var settings = PaymentSettings()
        if let url = try reader.url(options.paymentApiUrl, flag: "payment-api-url") {
            settings.toss = TossAPI(
                url: url,
                secretKey: try reader.secret(
                    options.paymentSecretKeyFile, fileFlag: "payment-secret-key-file", for: "payment-api-url"),
                clientKey: try reader.required(
                    options.paymentClientKey, flag: "payment-client-key",
                    for: "payment-api-url"))
        }
        let folder = reader.text(options.devPaymentsFolder, flag: "dev-payments-folder", default: "")
        settings.developmentFolder = folder.isEmpty ? nil : folder
        settings.webhookHost = reader.text(
            options.paymentWebhookHost, flag: "payment-webhook-host", default: "127.0.0.1")
        let port = try reader.integer(
            options.paymentWebhookPort, flag: "payment-webhook-port", default: -1,
            range: -1...65_535)
        if port >= 0 {
            settings.webhookPort = port
            settings.webhookSecret = try reader.secret(
                options.paymentWebhookSecretFile, fileFlag: "payment-webhook-secret-file",
                for: "payment-webhook-port")
        }
        return settings
    }
}
