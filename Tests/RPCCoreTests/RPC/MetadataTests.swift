import XCTest

@testable import RPCCore

/// Keys are kept lowercase and looked up whatever their case, as HTTP/2 headers are.
final class MetadataTests: XCTestCase {
    func testKeysAreFoundWhateverTheirCase() {
        var metadata: Metadata = ["Authorization": "Bearer t", "x-trace": "1"]
        metadata.add("X-Trace", "2")
        metadata.add("Ключ", "значение")
        XCTAssertEqual(metadata.map(\.key), ["authorization", "x-trace", "x-trace", "ключ"])
        XCTAssertEqual(metadata["authorization"], "Bearer t")
        XCTAssertEqual(metadata["AUTHORIZATION"], "Bearer t")
        XCTAssertEqual(metadata.values(for: "X-TRACE"), ["1", "2"])
        XCTAssertEqual(metadata["КЛЮЧ"], "значение", "a key that is not ASCII is lowercased as String does")
        XCTAssertNil(metadata["authorizatio"])
        XCTAssertNil(metadata["yedi-app"])

        metadata["X-Trace"] = "3"
        XCTAssertEqual(metadata.values(for: "x-trace"), ["3"])
        metadata.remove("AUTHORIZATION")
        XCTAssertNil(metadata["authorization"])
        XCTAssertEqual(metadata.count, 2)
    }
}
