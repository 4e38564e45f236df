import Foundation
import RPCCore
import ServiceRuntime
import XCTest
import YediCrypto
import YediProto

/// One cursor format for every list: opaque, versioned, tamper-evident, bound to its list; one page-size
/// rule.
final class PageCursorTests: XCTestCase {
    private let posts = PageList("content.posts", defaultLimit: 3, maximumLimit: 50, key: .forTests)
    private let likes = PageList("content.likes", defaultLimit: 3, maximumLimit: 50, key: .forTests)

    private func request(_ cursor: String, limit: Int32 = 0) -> YediCommon.PageRequest {
        YediCommon.PageRequest(cursor: cursor, limit: limit)
    }

    func testACursorLeadsBackToThePositionAfterTheLastItemShown() throws {
        let positions = (1...4).map { PagePosition<Int64>(key: 1_000 - Int64($0), id: "p\($0)") }
        let info = posts.next(positions, limit: 3)
        XCTAssertFalse(info.nextCursor.isEmpty)
        XCTAssertFalse(info.nextCursor.contains("p3"), "opaque: \(info.nextCursor)")
        let page = try posts.read(request(info.nextCursor, limit: 2), as: Int64.self)
        XCTAssertEqual(page.after, PagePosition(key: 997, id: "p3"))
        XCTAssertEqual(page.limit, 2)
        XCTAssertEqual(posts.next(Array(positions.prefix(3)), limit: 3).nextCursor, "", "no extra row: the end")

        let names = PageList("account.designer-search", key: .forTests)
        let text = PagePosition(key: "3|박지호\u{0}x", id: "d-1")
        let named = try names.read(request(names.cursor(after: text)), as: String.self)
        XCTAssertEqual(named.after, text, "any text key, even one with a NUL")
    }

    func testACursorFromAnotherListIsRefusedNamingTheField() {
        let cursor = posts.cursor(after: PagePosition<Int64>(key: 5, id: "p1"))
        for read in [
            { () throws -> Void in _ = try self.likes.read(self.request(cursor), as: Int64.self) },
            { () throws -> Void in
                _ = try PageList("content.posts", key: PageCursorKey(deriving: [1, 2, 3])).read(
                    self.request(cursor), as: Int64.self)
            },
        ] {
            XCTAssertThrowsError(try read()) { error in
                XCTAssertEqual((error as? RPCError)?.code, .invalidArgument)
                XCTAssertEqual((error as? RPCError)?.message, "page.cursor: not a cursor from this list")
            }
        }
    }

    func testAnEditedOrForeignCursorIsRefused() {
        let cursor = posts.cursor(after: PagePosition<Int64>(key: 5, id: "p1"))
        var bytes = Base64URL.decode(cursor) ?? []
        bytes[3] ^= 0x01  // the key's text: "5" becomes "4"
        let edited = Base64URL.encode(bytes)
        let unsigned = Base64URL.encode([1, 0, 1] + Array("5p1".utf8))
        let oldFormat = Base64URL.encode(Array("1\u{0}p\u{0}5\u{0}p1".utf8))
        let overlong = String(repeating: "A", count: 2_000)
        for bad in [edited, unsigned, oldFormat, "garbage", "!!", "12345", overlong] {
            XCTAssertThrowsError(try posts.read(request(bad), as: Int64.self), bad) { error in
                XCTAssertEqual((error as? RPCError)?.code, .invalidArgument, bad)
            }
        }
        XCTAssertThrowsError(
            try posts.read(request(posts.cursor(after: PagePosition(key: "not a number", id: "p1"))), as: Int64.self),
            "a text key where the list sorts by number")
    }

    func testOnePageSizeRule() throws {
        XCTAssertEqual(try posts.read(request("", limit: 0), as: Int64.self).limit, 3, "0 is the list's default")
        XCTAssertEqual(try posts.read(request("", limit: 7), as: Int64.self).limit, 7)
        XCTAssertEqual(try posts.read(request("", limit: 5_000), as: Int64.self).limit, 50, "capped")
        XCTAssertEqual(try posts.read(nil, as: Int64.self).limit, 3)
        XCTAssertNil(try posts.read(nil, as: Int64.self).after)
        XCTAssertThrowsError(try posts.read(request("", limit: -1), as: Int64.self)) { error in
            XCTAssertEqual((error as? RPCError)?.message, "page.limit: must not be negative")
        }
    }
}
