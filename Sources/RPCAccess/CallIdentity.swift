import Logging
import RPCCore

/// What RPCAccess keeps in the core's `ServerContext.identity`: the caller, the user a service acts for,
/// and the app the call is made in.
struct CallIdentity: CallerIdentity {
    var caller: Caller
    var onBehalfOf: AuthenticatedUser?
    var app: AppID = .yedi

    func logName(userTag: LogUserTag) -> String? {
        caller == .anonymous ? nil : userTag.caller(caller)
    }
}

extension ServerContext {
    /// Who the call acts for; set by `AuthenticationInterceptor` (`.anonymous` until then).
    public var caller: Caller {
        get { (identity as? CallIdentity)?.caller ?? .anonymous }
        set { identity = CallIdentity(caller: newValue, onBehalfOf: onBehalfOf, app: app) }
    }

    /// The end user a service caller acts for (`yedi-on-behalf-of`, verified like any access token);
    /// set by `AuthenticationInterceptor`, nil when the caller is not a service or named nobody.
    public var onBehalfOf: AuthenticatedUser? {
        get { (identity as? CallIdentity)?.onBehalfOf }
        set { identity = CallIdentity(caller: caller, onBehalfOf: newValue, app: app) }
    }

    /// Sets what authentication established, at once (one stored identity per call).
    mutating func authenticate(caller: Caller, onBehalfOf: AuthenticatedUser?, app: AppID) {
        identity = CallIdentity(caller: caller, onBehalfOf: onBehalfOf, app: app)
    }

    /// The app the call is made in, set by `AuthenticationInterceptor`: a user's token's app (the user
    /// a service acts for, for a service), else the `yedi-app` metadata, else YeDi. Handlers scope every
    /// read and write to it.
    public var app: AppID {
        get { (identity as? CallIdentity)?.app ?? .yedi }
        set { identity = CallIdentity(caller: caller, onBehalfOf: onBehalfOf, app: newValue) }
    }

    /// A context whose caller is already known (tests, and calls run outside a connection).
    public init(
        method: MethodDescriptor,
        metadata: Metadata,
        deadline: ContinuousClock.Instant?,
        peer: PeerInfo,
        caller: Caller,
        onBehalfOf: AuthenticatedUser? = nil,
        app: AppID? = nil,
        trace: TraceContext? = nil,
        userTag: LogUserTag = .perProcess,
        logger: Logger
    ) {
        self.init(
            method: method,
            metadata: metadata,
            deadline: deadline,
            peer: peer,
            identity: CallIdentity(
                caller: caller, onBehalfOf: onBehalfOf,
                app: app ?? onBehalfOf?.app ?? caller.user?.app ?? .yedi),
            trace: trace,
            userTag: userTag,
            logger: logger
        )
    }
}

extension LogUserTag {
    /// The caller as logs show it: `user h:3f9a… (customer)`, `service account`, `anonymous`.
    public func caller(_ caller: Caller) -> String {
        guard case .user(let user) = caller else { return caller.description }
        return "user \(callAsFunction(user.id)) (\(user.role))"
    }
}
