/// The one place where a call's outcome meets the wire's `Status` message: what an END, CANCEL or
/// GOAWAY frame says, read and written the same way by both ends.
extension YediRPC.Status {
    init(_ code: StatusCode, _ message: String) {
        self.init(code: UInt32(code.rawValue), message: message)
    }

    /// The status of an `RPCError` as its END frame carries it (its trailers travel beside it).
    init(_ error: RPCError) {
        self.init(error.code, error.message)
    }

    /// The code read leniently: a code from a newer peer reads as UNKNOWN.
    var statusCode: StatusCode { StatusCode(wireValue: code) }
}

extension RPCError {
    /// The outcome an END frame states: nil for OK (a missing status is OK), the error otherwise, with
    /// the frame's metadata as its trailers.
    init?(wire status: YediRPC.Status?, trailers: Metadata) {
        guard let status, status.statusCode != .ok else { return nil }
        self.init(code: status.statusCode, message: status.message, metadata: trailers)
    }
}
