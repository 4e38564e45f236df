import XCTest

@testable import RPCCore

/// `RPCError` to the wire's `Status` and back, in the one place both ends use.
final class WireStatusTests: XCTestCase {
    func testEveryCodeRoundTripsWithItsMessageAndTrailers() {
        for code in StatusCode.allCases where code != .ok {
            let error = RPCError(code: code, message: "why \(code.name)", metadata: ["x-detail": "1"])
            let back = RPCError(wire: YediRPC.Status(error), trailers: error.metadata)
            XCTAssertEqual(back?.code, code)
            XCTAssertEqual(back?.message, "why \(code.name)")
            XCTAssertEqual(back?.metadata["x-detail"], "1")
        }
    }

    func testOKAndAMissingStatusAreNoError() {
        XCTAssertNil(RPCError(wire: nil, trailers: [:]))
        XCTAssertNil(RPCError(wire: YediRPC.Status(.ok, ""), trailers: [:]))
    }

    func testACodeFromANewerPeerReadsAsUnknown() {
        let error = RPCError(wire: YediRPC.Status(code: 99, message: "new"), trailers: [:])
        XCTAssertEqual(error?.code, .unknown)
        XCTAssertEqual(error?.message, "new")
    }
}
