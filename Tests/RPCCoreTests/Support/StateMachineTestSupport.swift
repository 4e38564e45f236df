import NIOCore

@testable import RPCCore

/// The server connection's state machine as the rule tests drive it: each call's resources are its id,
/// each reply's its size, so the rules read as before the machine kept the handler's objects.
typealias TestServerMachine = ServerConnectionStateMachine<UInt64, Int>

extension ServerConnectionStateMachine where CallResources == UInt64 {
    /// A request whose call, if admitted, carries its id as its resources.
    mutating func requestReceived(_ request: Request) -> RequestAction {
        requestReceived(request) { request.id }
    }
}

extension ServerConnectionStateMachine where Reply == Int {
    /// A reply that carries its size.
    mutating func replyProduced(bytes: Int, at now: NIODeadline) -> ReplyAction {
        replyProduced(bytes, bytes: bytes, at: now)
    }
}

extension MetadataSize {
    /// `entries` entries of a one-byte key and a one-byte value.
    static func entries(_ count: Int) -> MetadataSize {
        var size = MetadataSize()
        for _ in 0..<count { size.add(keyBytes: 1, valueBytes: 1) }
        return size
    }
}
