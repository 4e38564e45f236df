import ProtoBridge

/// The responses of a server-streaming call, in order; iteration ends when the call ends OK and throws
/// its `RPCError` otherwise.
public struct RPCResponseStream<Message: ProtoMessage>: AsyncSequence, Sendable {
    public typealias Element = Message

    let state: ResponseStreamState

    public struct AsyncIterator: AsyncIteratorProtocol {
        let state: ResponseStreamState

        public mutating func next() async throws -> Message? {
            guard let payload = try await state.next() else { return nil }
            do {
                return try Message(serializedBytes: payload)
            } catch {
                throw RPCError(code: .internalError, message: "the response could not be decoded: \(error)")
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(state: state) }

    /// The trailing metadata, once the stream has ended.
    public var trailers: Metadata? { state.trailers }
}

/// The responses of a server-streaming call as serialized bytes, for callers that know the response
/// type only at run time.
public struct RPCRawResponseStream: AsyncSequence, Sendable {
    public typealias Element = [UInt8]

    let state: ResponseStreamState

    public struct AsyncIterator: AsyncIteratorProtocol {
        let state: ResponseStreamState

        public mutating func next() async throws -> [UInt8]? {
            try await state.next()
        }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(state: state) }

    /// The trailing metadata, once the stream has ended.
    public var trailers: Metadata? { state.trailers }
}
