/// What the application declares about a method for its interceptors (Yedi: who may call it, `AccessRule`
/// in RPCAccess, from the method's `(yedi.rpc.access)` option). The core carries it on the method's
/// descriptor and compares it; it never reads it.
public protocol MethodPolicy: Sendable, Hashable, CustomStringConvertible {}
