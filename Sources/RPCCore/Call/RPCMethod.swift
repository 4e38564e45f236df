import ProtoBridge

/// A method together with its request and response types, so stubs and handlers are type-checked.
public struct RPCMethod<Request: ProtoMessage, Response: ProtoMessage>: Sendable, Hashable {
    public let descriptor: MethodDescriptor

    public init(
        service: String,
        method: String,
        kind: RPCKind,
        idempotency: Idempotency,
        policy: (any MethodPolicy)? = nil
    ) {
        descriptor = MethodDescriptor(
            service: service,
            method: method,
            kind: kind,
            idempotency: idempotency,
            policy: policy,
            requestType: Request.schema.fullName,
            responseType: Response.schema.fullName
        )
    }
}
