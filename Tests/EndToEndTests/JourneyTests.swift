import Foundation
import RPCTestSupport
import XCTest

/// Polls `condition` every 100 ms until it holds or `timeout` seconds pass.
func eventually(timeout: TimeInterval, _ condition: () throws -> Bool) throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.1)
    } while Date() < deadline
    return try condition()
}

/// The whole Yedi journey through the probe, against the four real executables as separate processes.
final class JourneyTests: XCTestCase {
    private var system: YediSystem!

    override func setUpWithError() throws {
        system = try YediSystem()
        try system.startAll()
    }

    override func tearDownWithError() throws {
        system.stopAll()
        system = nil
    }

    private let account = "yedi.account.AccountService/"

    func testSignUpSignInAcrossARestartAndDeletionLeavesNothing() throws {
        let designer = try system.call(
            "account", account + "SignUp",
            #"""
            {"email": "jiho@example.com", "password": "scissors99", "name": "박지호", "phone": "01098765432",
             "gender": "GENDER_MALE", "birthDate": {"year": 1988, "month": 11, "day": 3}, "role": "ROLE_DESIGNER",
             "designer": {"description": "펌 전문", "skills": ["펌"], "rank": "DESIGNER_RANK_PRINCIPAL",
               "shop": {"name": "살롱 드 서울", "phone": "0255551234",
                 "address": {"city": "서울", "district": "강남구 테헤란로", "detail": "3층"},
                 "latitude": 37.5, "longitude": 127.03}}}
            """#)
        let designerID = designer.string("user.id")
        XCTAssertFalse(designerID.isEmpty)
        _ = try system.call(
            "account", account + "SignUp",
            #"""
            {"email": "minji@example.com", "password": "hair2024!", "name": "김민지", "phone": "01012345678",
             "gender": "GENDER_FEMALE", "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}
            """#)
        let signIn = try system.call(
            "account", account + "SignIn", #"{"email": "minji@example.com", "password": "hair2024!"}"#)
        let customerID = signIn.string("user.id")
        let customerToken = signIn.string("session.accessToken")

        let found = try system.call("account", account + "SearchDesigners", #"{"query": "지호"}"#, token: customerToken)
        XCTAssertEqual(found.string("designers.0.user.id"), designerID, "found by part of the name")
        let followed = try system.call(
            "account", account + "Follow", #"{"designerId": "\#(designerID)"}"#, token: customerToken)
        XCTAssertEqual(followed.string("followerCount"), "1")

        // SIGKILL mid-journey: the acknowledged follow survives the restart.
        system.kill("account")
        try system.start("account")
        let profile = try system.call("account", account + "GetDesigner", #"{"designerId": "\#(designerID)"}"#)
        XCTAssertEqual(profile.string("followerCount"), "1")

        _ = try system.call("account", account + "DeleteAccount", #"{"password": "hair2024!"}"#, token: customerToken)
        let gone = try system.failingCall("account", account + "GetMe", "{}", token: customerToken)
        XCTAssertEqual(gone.status, "UNAUTHENTICATED", gone.message)

        // The other services purge through Account's outbox: wait until it has delivered (its rows name the
        // customer until then); then no table or file of any service names the customer.
        let accountData = system.dataDirectory("account")
        let delivered = try eventually(timeout: 30) { try DataScan.find(customerID, in: accountData).isEmpty }
        let left = try DataScan.find(customerID, in: accountData)
        XCTAssertTrue(delivered, "Account's outbox still holds the purge: \(left)")
        let results = system.stopAll()
        for (service, result) in results {
            XCTAssertEqual(result.exitCode, 0, "\(service) stopped cleanly:\n\(result.errorOutput.suffix(2000))")
        }
        let findings = try DataScan.find(customerID, in: system.root.appendingPathComponent("data"))
        XCTAssertEqual(findings.map(\.place), [], "the deleted customer \(customerID) is still somewhere")
    }
}
