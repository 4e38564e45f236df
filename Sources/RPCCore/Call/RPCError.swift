/// A call that did not succeed: a non-OK status code, a message for the caller, and trailing metadata.
///
/// Handlers throw it to answer with a specific code (`NOT_FOUND`, `PERMISSION_DENIED`, …); anything else
/// a handler throws reaches the caller as `INTERNAL` with no details. Clients receive it for every
/// failed call, including local failures (deadline, connection lost, cancellation).
public struct RPCError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: StatusCode
    public var message: String
    public var metadata: Metadata

    public init(code: StatusCode, message: String, metadata: Metadata = [:]) {
        precondition(code != .ok, "an RPCError cannot have the OK status")
        self.code = code
        self.message = message
        self.metadata = metadata
    }

    public var description: String { message.isEmpty ? code.name : "\(code.name): \(message)" }
}
