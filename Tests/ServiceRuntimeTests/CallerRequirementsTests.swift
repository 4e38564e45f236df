import Logging
import RPCAccess
import RPCCore
import ServiceRuntime
import XCTest
import YediProto

/// The handler kit's caller checks: each hands back the typed caller or the status a client acts on.
final class CallerRequirementsTests: XCTestCase {
    private func context(_ caller: Caller, onBehalfOf: AuthenticatedUser? = nil) -> ServerContext {
        ServerContext(
            method: YediBooking.BookingService.Method.updateSchedule.descriptor, metadata: [:], deadline: nil,
            peer: PeerInfo(address: "test"), caller: caller, onBehalfOf: onBehalfOf, logger: Logger(label: "test"))
    }

    private let customer = AuthenticatedUser(id: "u-1", role: .customer)
    private let designer = AuthenticatedUser(id: "u-2", role: .designer)

    func testRequireUserGivesTheSignedInUserAndRefusesOthersAsUnauthenticated() throws {
        XCTAssertEqual(try context(.user(customer)).requireUser(), customer)
        for caller in [Caller.anonymous, .service(name: "account")] {
            XCTAssertThrowsError(try context(caller).requireUser()) { error in
                XCTAssertEqual((error as? RPCError)?.code, .unauthenticated, "\(caller)")
            }
        }
    }

    func testRequireRoleGivesAUserOfThatRoleAndRefusesAnotherRoleNamingTheMethod() throws {
        XCTAssertEqual(try context(.user(designer)).requireRole(.designer), designer)
        XCTAssertThrowsError(try context(.user(customer)).requireRole(.designer)) { error in
            let status = error as? RPCError
            XCTAssertEqual(status?.code, .permissionDenied)
            XCTAssertEqual(
                status?.message, "/yedi.booking.BookingService/UpdateSchedule is for designer accounts only")
        }
        XCTAssertThrowsError(try context(.anonymous).requireRole(.customer)) { error in
            XCTAssertEqual((error as? RPCError)?.code, .unauthenticated, "sign in first, then the role")
        }
    }

    func testRequireServiceGivesTheServiceNameAndRefusesUsers() throws {
        XCTAssertEqual(try context(.service(name: "account")).requireService(), "account")
        XCTAssertThrowsError(try context(.user(customer)).requireService()) { error in
            XCTAssertEqual((error as? RPCError)?.code, .permissionDenied)
        }
    }

    func testRequireActingNeedsTheNamedUsersOwnToken() throws {
        let service = context(.service(name: "chat"), onBehalfOf: customer)
        XCTAssertEqual(try service.requireActing(forOneOf: ["u-1", "u-9"], field: "user_ids"), customer)
        XCTAssertThrowsError(try service.requireActing(forOneOf: ["u-9"], field: "user_ids")) { error in
            XCTAssertEqual((error as? RPCError)?.code, .permissionDenied)
        }
        XCTAssertThrowsError(try context(.service(name: "chat")).requireActing(forOneOf: ["u-1"], field: "user_ids")) {
            error in XCTAssertEqual((error as? RPCError)?.code, .permissionDenied, "no token: the service's word alone")
        }
    }
}
