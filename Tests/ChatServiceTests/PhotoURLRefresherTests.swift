import Logging
import NIOConcurrencyHelpers
import ServiceRuntime
import XCTest

@testable import ChatService

/// History shows chat photos by their current signed URLs: asked of ContentService once per photo per
/// hour, the last known (or stored) URL when it cannot answer, post shares untouched.
final class PhotoURLRefresherTests: XCTestCase {
    private let logger = Logger(label: "test")

    private func photo(_ id: String, seq: Int64) -> MessageRecord {
        MessageRecord(
            id: "m\(seq)", roomID: "r", seq: seq, senderID: "u", sentAtMilliseconds: 0, clientMessageID: nil,
            body: .image(ImageRecord(id: id, url: "old-\(id)", width: 1, height: 1)))
    }

    func testImageURLsAreRefreshedOncePerHourAndKeptWhenContentIsDown() async throws {
        let clock = ManualClock()
        let asked = NIOLockedValueBox<[[String]]>([])
        let down = NIOLockedValueBox(false)
        let version = NIOLockedValueBox(1)
        let refresher = PhotoURLRefresher(capacity: 10, clock: clock) { ids in
            asked.withLockedValue { $0.append(ids.sorted()) }
            if down.withLockedValue({ $0 }) { throw CancellationError() }
            let v = version.withLockedValue { $0 }
            return ids.filter { $0 != "gone" }.map {
                ChatPeers.OwnedImage(image: ImageRecord(id: $0, url: "\($0)?v=\(v)", width: 1, height: 1), ownerID: "u")
            }
        }
        let share = MessageRecord(
            id: "s", roomID: "r", seq: 9, senderID: "u", sentAtMilliseconds: 0, clientMessageID: nil,
            body: .postShare(postID: "p", title: "t", firstPhoto: nil, text: ""))
        let page = [photo("a", seq: 1), photo("b", seq: 2), photo("a", seq: 3), photo("gone", seq: 4), share]

        func urls(_ messages: [MessageRecord]) -> [String] {
            messages.map {
                if case .image(let image) = $0.body { return image.url }
                return "share"
            }
        }
        let first = await refresher.refresh(page, logger: logger)
        XCTAssertEqual(urls(first), ["a?v=1", "b?v=1", "a?v=1", "old-gone", "share"])
        XCTAssertEqual(asked.withLockedValue { $0 }, [["a", "b", "gone"]], "one lookup for the page's photos")

        version.withLockedValue { $0 = 2 }
        clock.advance(by: 3_599)
        let cached = await refresher.refresh(page, logger: logger)
        XCTAssertEqual(urls(cached), ["a?v=1", "b?v=1", "a?v=1", "old-gone", "share"], "within the hour: cached")
        XCTAssertEqual(asked.withLockedValue { $0 }.count, 2, "only the unknown image was asked again")

        clock.advance(by: 2)
        let renewed = await refresher.refresh(page, logger: logger)
        XCTAssertEqual(urls(renewed), ["a?v=2", "b?v=2", "a?v=2", "old-gone", "share"])

        down.withLockedValue { $0 = true }
        clock.advance(by: 3_601)
        let degraded = await refresher.refresh(page, logger: logger)
        XCTAssertEqual(
            urls(degraded), ["a?v=2", "b?v=2", "a?v=2", "old-gone", "share"], "ContentService down: the last known URLs"
        )
        let unseen = await refresher.refresh([photo("c", seq: 5)], logger: logger)
        XCTAssertEqual(urls(unseen), ["old-c"], "never refreshed and ContentService down: the stored URL")
    }
}
