import Logging
import XCTest
import YediProto

@testable import RPCCore

/// A context's metadata lives in the call's shared record until something sets it: a value set on one
/// copy (an interceptor's) is that copy's alone, and never changes what the request brought.
final class ServerContextTests: XCTestCase {
    private func context(metadata: Metadata) -> ServerContext {
        ServerContext(
            method: YediEcho.Echo.Method.echo.descriptor, metadata: metadata, deadline: nil,
            peer: PeerInfo(address: "test"), logger: Logger(label: "test"))
    }

    func testMetadataSetOnACopyIsThatCopysAlone() {
        let original = context(metadata: ["request-id": "r-1", "authorization": "Bearer t"])
        var changed = original
        changed.metadata["request-id"] = "r-2"
        changed.metadata["x-added"] = "yes"

        XCTAssertEqual(changed.metadata["request-id"], "r-2")
        XCTAssertEqual(changed.metadata["x-added"], "yes")
        XCTAssertEqual(changed.metadata["authorization"], "Bearer t", "the rest of the request's metadata stays")
        XCTAssertEqual(original.metadata["request-id"], "r-1")
        XCTAssertNil(original.metadata["x-added"])
        XCTAssertEqual(original.record.metadata["request-id"], "r-1", "the record keeps what the request brought")

        var copyOfChanged = changed
        XCTAssertEqual(copyOfChanged.metadata["x-added"], "yes", "a copy of a changed context carries the change")
        copyOfChanged.metadata = [:]
        XCTAssertNil(copyOfChanged.metadata["authorization"])
        XCTAssertEqual(changed.metadata["authorization"], "Bearer t")
    }
}
