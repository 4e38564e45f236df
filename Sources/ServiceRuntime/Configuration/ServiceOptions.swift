import ArgumentParser

/// The command-line flags every Yedi service process takes; each has a `YEDI_…` environment variable too.
///
/// Every value is read as text here and checked in one place (`ServiceConfiguration.resolve`), so a bad
/// value gets the same message naming the option whether it came from a flag or from the environment.
/// A flag wins over the environment; the environment wins over the service's default.
public struct ServiceOptions: ParsableArguments {
    @Option(help: "Address to listen on for RPC. (YEDI_HOST; default 127.0.0.1)")
    public var host: String?

    @Option(help: "RPC port (TLS). (YEDI_PORT; default: the service's own)")
    public var port: String?

    @Option(help: "Plain-HTTP port for /metrics and /healthz, on loopback. (YEDI_METRICS_PORT)")
    public var metricsPort: String?

    @Option(help: "Folder for this service's database and blobs. (YEDI_DATA; default data/<service>)")
    public var data: String?

    @Option(help: "PKI folder: ca.pem, <service>.pem/.key, token keys. (YEDI_PKI; default deploy/pki)")
    public var pki: String?

    @Option(help: "This service's certificate chain. (YEDI_CERT; default <pki>/<service>.pem)")
    public var cert: String?

    @Option(help: "This service's private key. (YEDI_KEY; default <pki>/<service>.key)")
    public var key: String?

    @Option(help: "CA certificates trusted for peers and clients. (YEDI_CA; default <pki>/ca.pem)")
    public var ca: String?

    @Option(
        help: """
            Public keys access tokens are verified with, comma-separated (several during a key rotation). \
            (YEDI_TOKEN_PUBLIC_KEYS; default <pki>/token-signing.pub.pem)
            """)
    public var tokenPublicKeys: String?

    @Option(
        help: """
            Private key access tokens are signed with (AccountService only). \
            (YEDI_TOKEN_SIGNING_KEY; default <pki>/token-signing.key)
            """)
    public var tokenSigningKey: String?

    @Option(
        help: """
            File with the deployment's key (16+ bytes) for the user tags in logs (user=h:…), shared by the \
            services. (YEDI_LOG_KEY; default: <data>/log.key, made on first start)
            """)
    public var logKey: String?

    @Option(
        help: """
            Folder of the apps this process serves, an <app>.json each (docs/platform.md, "Apps as tenants"). \
            (YEDI_APPS; default: YeDi alone)
            """)
    public var apps: String?

    @Option(
        name: .customLong("peer"),
        help: """
            A peer service and its addresses, NAME=HOST:PORT[,HOST:PORT…] (replicas); repeat per peer. \
            (YEDI_PEERS, entries separated by spaces or ';'; default: the local development ports)
            """)
    public var peers: [String] = []

    @Option(
        name: .customLong("quota"),
        help: """
            A per-user quota, NAME=LIMIT (docs/services.md, "Quotas and retention"); repeat per quota. \
            (YEDI_QUOTAS, entries separated by spaces or ';'; default: the documented limits)
            """)
    public var quotas: [String] = []

    @Option(
        name: .customLong("retention"),
        help: """
            How long deletable rows are kept, NAME=HOURS (docs/services.md, "Quotas and retention"); repeat \
            per name. (YEDI_RETENTION, entries separated by spaces or ';'; default: the documented periods)
            """)
    public var retention: [String] = []

    @Option(help: "Images the in-memory cache keeps. (YEDI_IMAGE_CACHE_ITEMS; default 50)")
    public var imageCacheItems: String?

    @Option(help: "HTTPS port serving images by URL (ContentService only). (YEDI_IMAGE_PORT; default 8002)")
    public var imagePort: String?

    @Option(
        help: """
            Public base of image URLs, as apps reach the image port (https://img.example.com). \
            (YEDI_IMAGE_URL_BASE; default https://<host>:<image port>)
            """)
    public var imageUrlBase: String?

    @Option(
        help: """
            File with the key (16+ bytes) image URLs are signed with, the same on every replica. \
            (YEDI_IMAGE_URL_KEY; default: <data>/image-url.key, made on first start)
            """)
    public var imageUrlKey: String?

    @Option(help: "Seconds a signed image URL stays valid. (YEDI_IMAGE_URL_LIFETIME; default 86400)")
    public var imageUrlLifetime: String?

    @Option(help: "Text items (profiles, previews) the in-memory cache keeps. (YEDI_TEXT_CACHE_ITEMS; default 1000)")
    public var textCacheItems: String?

    @Option(help: "Largest frame accepted, in bytes. (YEDI_MAX_FRAME_BYTES; default: the service's own)")
    public var maxFrameBytes: String?

    @Option(
        help: """
            Costly anonymous calls (AccountService: sign-up, sign-in, refresh, the deletion password check) \
            per client address, as CALLS/SECONDS. (YEDI_SIGN_IN_RATE_PER_ADDRESS; default 20/60)
            """)
    public var signInRatePerAddress: String?

    @Option(
        help: """
            The same calls per connection, as CALLS/SECONDS. (YEDI_SIGN_IN_RATE_PER_CONNECTION; default 10/60)
            """)
    public var signInRatePerConnection: String?

    @Option(
        help: """
            sqlite, or a PostgreSQL URL postgresql://ROLE@HOST:PORT/DATABASE[?sslmode=verify-full|disable] \
            (a Unix socket: ?host=/socket/folder), never with a password in it (docs/postgres.md). \
            (YEDI_DATABASE; default sqlite: <data>/<service>.sqlite)
            """)
    public var database: String?

    @Option(
        help: """
            File (mode 0600, or 0640 owned by root and the service's group) with the PostgreSQL role's password. (YEDI_DATABASE_PASSWORD_FILE)
            """)
    public var databasePasswordFile: String?

    @Option(
        help: """
            CA certificates PostgreSQL's certificate is verified against (sslmode=verify-full). \
            (YEDI_DATABASE_CA; default: the system's)
            """)
    public var databaseCa: String?

    @Option(help: "PostgreSQL connections this process may open. (YEDI_DATABASE_POOL_SIZE; default 6)")
    public var databasePoolSize: String?

    @Option(
        help: """
            Seconds a PostgreSQL store call may wait for a connection and its answer before it answers \
            UNAVAILABLE. (YEDI_DATABASE_TIMEOUT; default 5)
            """)
    public var databaseTimeout: String?

    @Option(
        help: """
            Seconds a starting service keeps trying to reach PostgreSQL. (YEDI_DATABASE_CONNECT_TIMEOUT; \
            default 30)
            """)
    public var databaseConnectTimeout: String?

    @Option(
        help: """
            This process's name among the service's replicas, for logs, metrics and leases. \
            (YEDI_REPLICA; default HOST:PORT)
            """)
    public var replica: String?

    @Option(help: "trace, debug, info, notice, warning, error or critical. (YEDI_LOG_LEVEL; default info)")
    public var logLevel: String?

    @Option(help: "Seconds calls in flight get to finish on SIGTERM/SIGINT. (YEDI_SHUTDOWN_GRACE; default 10)")
    public var shutdownGrace: String?

    @Flag(
        help: """
            Development mode: development-only features may be switched on (--dev-clock); the process says \
            so in its log. Never in production. (YEDI_DEVELOPMENT=1)
            """)
    public var development = false

    @Flag(
        help: """
            DEVELOPMENT ONLY, with --development: let yedi.runtime.DevClock/AdvanceClock (callable with the \
            operator's service certificate only) move this process's clock forward. (YEDI_DEV_CLOCK=1)
            """)
    public var devClock = false

    @Option(
        help: """
            Base URL of SendGrid's v3 mail API (https://api.sendgrid.com); unset, mail is written to \
            <data>/sent-mail. (YEDI_MAIL_API_URL)
            """)
    public var mailApiUrl: String?

    @Option(help: "File with the mail API key; or the key itself in YEDI_MAIL_API_KEY. (YEDI_MAIL_API_KEY_FILE)")
    public var mailApiKeyFile: String?

    @Option(help: "The address mail is sent from, with --mail-api-url. (YEDI_MAIL_FROM)")
    public var mailFrom: String?

    @Option(
        help: """
            Base URL of NHN Cloud's SMS API v3.0 (https://api-sms.cloud.toast.com); unset, SMS is written to \
            <data>/sent-sms. (YEDI_SMS_API_URL)
            """)
    public var smsApiUrl: String?

    @Option(help: "The NHN Cloud SMS app key, with --sms-api-url. (YEDI_SMS_APP_KEY)")
    public var smsAppKey: String?

    @Option(help: "File with the SMS secret key; or the key itself in YEDI_SMS_API_KEY. (YEDI_SMS_API_KEY_FILE)")
    public var smsApiKeyFile: String?

    @Option(help: "The registered number SMS is sent from, with --sms-api-url. (YEDI_SMS_SENDER_NUMBER)")
    public var smsSenderNumber: String?

    @Option(
        help: """
            Base URL of Firebase Cloud Messaging's HTTP v1 API (https://fcm.googleapis.com); unset, push is \
            written to <data>/sent-push. (YEDI_PUSH_API_URL)
            """)
    public var pushApiUrl: String?

    @Option(help: "The Firebase project id, with --push-api-url. (YEDI_PUSH_PROJECT)")
    public var pushProject: String?

    @Option(
        help: """
            Google service-account key (JSON) that FCM access tokens are minted from; or the JSON itself in \
            YEDI_PUSH_SERVICE_ACCOUNT. (YEDI_PUSH_SERVICE_ACCOUNT_FILE)
            """)
    public var pushServiceAccountFile: String?

    @Option(
        help: """
            Instead of a service-account key: file with an OAuth access token for FCM (refreshed by the \
            operator); or the token itself in YEDI_PUSH_ACCESS_TOKEN. (YEDI_PUSH_ACCESS_TOKEN_FILE)
            """)
    public var pushAccessTokenFile: String?

    @Option(
        help: """
            BookingService: base URL of Toss Payments' API v1 (https://api.tosspayments.com); unset, the \
            development provider takes payments (docs/payments.md). (YEDI_PAYMENT_API_URL)
            """)
    public var paymentApiUrl: String?

    @Option(
        help: """
            File with the payment secret key; or the key itself in YEDI_PAYMENT_SECRET_KEY. \
            (YEDI_PAYMENT_SECRET_KEY_FILE)
            """)
    public var paymentSecretKeyFile: String?

    @Option(help: "The payment client key the app opens the payment UI with. (YEDI_PAYMENT_CLIENT_KEY)")
    public var paymentClientKey: String?

    @Option(help: "BookingService: the payment webhook's port; unset, no webhook. (YEDI_PAYMENT_WEBHOOK_PORT)")
    public var paymentWebhookPort: String?

    @Option(help: "The payment webhook's address. (YEDI_PAYMENT_WEBHOOK_HOST; default 127.0.0.1)")
    public var paymentWebhookHost: String?

    @Option(
        help: """
            File with the secret the provider signs webhooks with; or the secret itself in \
            YEDI_PAYMENT_WEBHOOK_SECRET. (YEDI_PAYMENT_WEBHOOK_SECRET_FILE)
            """)
    public var paymentWebhookSecretFile: String?

    @Option(
        help: """
            BookingService without a payment provider: the development provider's folder, one JSON file per \
            order; give every replica the same one (they stand for one gateway). (YEDI_DEV_PAYMENTS_FOLDER; \
            default <data>/dev-payments)
            """)
    public var devPaymentsFolder: String?

    public init() {}
}
