/// Who a call acts for, as the application's authentication established it (Yedi: `Caller` and the user a
/// service acts for, in RPCAccess). The core carries it from the interceptor that sets it to the handler
/// and names it in logs; it never decides anything by it.
public protocol CallerIdentity: Sendable {
    /// How logs name the caller (`user h:3f9a… (customer)`, `service account`), with user ids through
    /// `userTag`; nil for nobody (anonymous): the call's logger then names no caller, and its request line
    /// says `anonymous`.
    func logName(userTag: LogUserTag) -> String?
}
