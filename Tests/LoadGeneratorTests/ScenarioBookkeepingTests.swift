import XCTest

@testable import LoadGenerator

/// What keeps yedi-mix's repeated likes and reservations valid: no server needed.
final class ScenarioBookkeepingTests: XCTestCase {
    func testEachPickOfAPairFlipsItsLike() {
        let likes = LikeBook(posts: 3)
        XCTAssertTrue(likes.flip(customer: 0, post: 1), "first: like")
        XCTAssertFalse(likes.flip(customer: 0, post: 1), "then: unlike")
        XCTAssertTrue(likes.flip(customer: 0, post: 1))
        XCTAssertTrue(likes.flip(customer: 1, post: 1), "another customer's like of the post is its own")
        XCTAssertTrue(likes.flip(customer: 0, post: 2))
    }

    func testReservationsAlternateWithCancelsAndStayWithinTheBudget() {
        // Two customers of designer 0, a budget of 2 reservations each.
        let desk = ReservationDesk(designerOf: [0, 0], slots: [[100, 200, 300]], budget: 2)
        guard case .reserve(let first, let slot, let key) = desk.next(start: 0) else {
            return XCTFail("a free customer with budget reserves")
        }
        XCTAssertEqual(first, 0)
        XCTAssertEqual(slot, 300)
        XCTAssertEqual(key, 1)
        // While customer 0's reservation is in flight, customer 1 reserves another slot.
        XCTAssertEqual(desk.next(start: 0), .reserve(customer: 1, slot: 200, key: 2))
        desk.reserved(customer: 0, slot: 300, reservation: "r1")
        // A held reservation is cancelled before anything else is reserved.
        XCTAssertEqual(desk.next(start: 1), .cancel(customer: 0, reservation: "r1", slot: 300))
        XCTAssertEqual(desk.next(start: 0), .none, "0 is cancelling, 1 is reserving")
        desk.cancelled(customer: 0, reservation: "r1", slot: 300, succeeded: true)
        desk.reserved(customer: 1, slot: 200, reservation: nil)  // refused: the slot is not offered again
        // The cancelled slot goes back at the end of the line: 100 comes first.
        XCTAssertEqual(desk.next(start: 0), .reserve(customer: 0, slot: 100, key: 3))
        desk.reserved(customer: 0, slot: 100, reservation: "r2")
        XCTAssertEqual(desk.next(start: 1), .cancel(customer: 0, reservation: "r2", slot: 100))
        desk.cancelled(customer: 0, reservation: "r2", slot: 100, succeeded: false)
        XCTAssertEqual(
            desk.next(start: 1), .cancel(customer: 0, reservation: "r2", slot: 100), "a failed cancel is retried")
        desk.cancelled(customer: 0, reservation: "r2", slot: 100, succeeded: true)
        // Customer 0 used its budget of 2; customer 1 has one left.
        XCTAssertEqual(desk.next(start: 0), .reserve(customer: 1, slot: 300, key: 4))
        desk.reserved(customer: 1, slot: 300, reservation: "r3")
        XCTAssertEqual(desk.next(start: 0), .cancel(customer: 1, reservation: "r3", slot: 300))
        desk.cancelled(customer: 1, reservation: "r3", slot: 300, succeeded: true)
        XCTAssertEqual(desk.next(start: 0), .none, "every budget is spent")
    }

    func testNoFreeSlotMeansNothingToReserve() {
        let desk = ReservationDesk(designerOf: [0, 1], slots: [[], [7]], budget: 9)
        XCTAssertEqual(desk.next(start: 0), .reserve(customer: 1, slot: 7, key: 1), "designer 0 has no slot")
        XCTAssertEqual(desk.next(start: 0), .none)
        XCTAssertEqual(ReservationDesk(designerOf: [], slots: [], budget: 1).next(start: 0), .none)
    }
}
