import Foundation
import ServiceTestSupport
import XCTest

/// A deleted user's still-valid access token once kept writing for up to 15 minutes in Content, Booking
/// and Chat (a like, a room and a reservation were stored after the purge). Now AccountService revokes
/// the user's tokens in every service through its outbox, each before that service's purge.
final class RevocationTests: XCTestCase {
    private var system: YediSystem!

    override func setUpWithError() throws {
        system = try YediSystem()
    }

    override func tearDownWithError() throws {
        system.stopAll()
        system = nil
    }

    /// The customer's token is used in a loop against every service while the account is deleted; once
    /// Account's outbox has delivered, every call is UNAUTHENTICATED and no data file holds the user id.
    func testADeletedUsersTokenIsRefusedEverywhereAndNothingTheyWroteMeanwhileRemains() throws {
        try system.startAll()
        let designer = try system.signUp(
            #"""
            {"email": "jiho@example.com", "password": "scissors99", "name": "박지호", "phone": "01098765432",
             "gender": "GENDER_MALE", "birthDate": {"year": 1988, "month": 11, "day": 3}, "role": "ROLE_DESIGNER",
             "designer": {"rank": "DESIGNER_RANK_PRINCIPAL", "shop": {"name": "살롱", "phone": "0255551234",
               "address": {"city": "서울", "district": "강남구", "detail": "3층"}}}}
            """#)
        let designerID = designer.string("user.id")
        let customer = try system.signUp(
            #"""
            {"email": "minji@example.com", "password": "hair2024!", "name": "김민지", "phone": "01012345678",
             "gender": "GENDER_FEMALE", "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}
            """#)
        let customerID = customer.string("user.id")
        let token = customer.string("session.accessToken")
        let photo = Data(SampleImages.png(width: 8, height: 8, seed: 3)).base64EncodedString()
        let calls: [(service: String, method: String, request: String)] = [
            ("account", "yedi.account.AccountService/GetMe", "{}"),
            (
                "content", "yedi.content.ContentService/UploadImage",
                #"{"data": "\#(photo)", "contentType": "image/png"}"#
            ),
            ("booking", "yedi.booking.BookingService/ListReservations", #"{"filter": "RESERVATION_FILTER_UPCOMING"}"#),
            ("chat", "yedi.chat.ChatService/OpenRoom", #"{"designerId": "\#(designerID)"}"#),
        ]
        for call in calls {  // the token works everywhere before the deletion
            _ = try system.call(call.service, call.method, call.request, token: token)
        }

        // A live chat stream of the customer's stays open through the deletion: it must not hold the
        // revocation (which waits for the user's calls) and must end when the user is revoked.
        let stream = try system.follow("chat", "yedi.chat.ChatService/Subscribe", "{}", token: token)

        // Each service is called in a loop, from its own thread, while the account is deleted.
        let stop = LockedFlag()
        let group = DispatchGroup()
        let runProbe = system.probeRunner
        for call in calls {
            let arguments = ["call", system.address(call.service), call.method, call.request, "--token", token]
            DispatchQueue.global().async(group: group) {
                while !stop.isSet { _ = try? runProbe(arguments) }
            }
        }
        Thread.sleep(forTimeInterval: 1)
        _ = try system.call(
            "account", "yedi.account.AccountService/DeleteAccount", #"{"password": "hair2024!"}"#, token: token)
        let accountData = system.dataDirectory("account")
        let delivered = try eventually(timeout: 60) { try DataScan.find(customerID, in: accountData).isEmpty }
        XCTAssertTrue(delivered, "Account's outbox still holds the revocations and purges")
        let streamEnd = stream.finish(timeout: 10)
        XCTAssertEqual(streamEnd.exitCode, 26, "the stream ends UNAUTHENTICATED: \(streamEnd.errorOutput)")
        for call in calls {
            let refused = try system.failingCall(call.service, call.method, call.request, token: token)
            XCTAssertEqual(refused.status, "UNAUTHENTICATED", "\(call.method): \(refused.message)")
        }
        Thread.sleep(forTimeInterval: 1)  // the loops keep trying after the purge, all refused
        stop.set()
        group.wait()

        let findings = try DataScan.find(customerID, in: system.root.appendingPathComponent("data"))
        XCTAssertEqual(findings.map(\.place), [], "the deleted customer \(customerID) is still somewhere")
    }
}

/// A flag one thread sets and others read.
private final class LockedFlag: @unchecked Sendable {
    // @unchecked: `value` is only touched under `lock`.
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }

    func set() { lock.withLock { value = true } }
}
