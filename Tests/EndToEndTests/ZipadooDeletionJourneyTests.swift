import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

/// Zipadoo on the four real processes (issue 30, "Deletion"): two members sign up and become friends,
/// each creates a promise with the other (BookingService asks AccountService's CheckFriends), one deletes
/// the account; then no table or file of any service holds their id or address, and the address and
/// nickname sign up again.
final class ZipadooDeletionJourneyTests: RunningSystemTestCase {
    private let friends = "yedi.zipadoo.Friends/"
    private let promises = "yedi.zipadoo.Promises/"

    private func signUp(_ nickname: String) throws -> (id: String, token: String) {
        let answer = try system.call(
            "account", friends + "SignUp",
            #"""
            {"email": "\#(nickname)@example.com", "password": "potato123", "name": "이름", "nickname": "\#(nickname)",
             "phone": "010-1234-5678", "mole": "doo4"}
            """#, app: "zipadoo")
        return (answer.string("profile.member.userId"), answer.string("session.accessToken"))
    }

    private func promise(by token: String, with participant: String) throws -> String {
        let at = Int64(Date().timeIntervalSince1970 * 1_000) + 2 * 3_600_000
        return try system.call(
            "booking", promises + "CreatePromise",
            #"""
            {"clientId": "\#(UUID().uuidString)", "title": "점심", "atMs": "\#(at)", "fee": 100,
             "place": {"name": "시청", "address": "서울 중구", "latitude": 37.5665, "longitude": 126.978},
             "participantIds": ["\#(participant)"]}
            """#, token: token
        ).string("id")
    }

    func testZipadooDeletedMemberLeavesNothingInAnyServiceAndSignsUpAgain() throws {
        let ana = try signUp("ana")
        let bo = try signUp("bo")
        try system.call("account", friends + "RequestFriend", #"{"nickname": "bo"}"#, token: ana.token)
        try system.call("account", friends + "AcceptFriend", #"{"userId": "\#(ana.id)"}"#, token: bo.token)
        let anas = try promise(by: ana.token, with: bo.id)
        let bos = try promise(by: bo.token, with: ana.id)
        XCTAssertFalse(anas.isEmpty || bos.isEmpty)

        try system.call(
            "account", "yedi.account.AccountService/DeleteAccount", #"{"password": "potato123"}"#, token: ana.token)
        let data = system.root.appendingPathComponent("data")
        let clean = try eventually(timeout: 30) {
            try DataScan.find(ana.id, in: data).isEmpty && DataScan.find("ana@example.com", in: data).isEmpty
        }
        let left = try DataScan.find(ana.id, in: data) + DataScan.find("ana@example.com", in: data)
        XCTAssertTrue(clean, "left: \(left)")
        // bo's promise stays without ana; ana's promise is gone.
        let kept = try system.call("booking", promises + "GetPromise", #"{"promiseId": "\#(bos)"}"#, token: bo.token)
        XCTAssertEqual((kept.at("participants") as? [Any])?.count, 1)
        let gone = try system.failingCall(
            "booking", promises + "GetPromise", #"{"promiseId": "\#(anas)"}"#, token: bo.token)
        XCTAssertEqual(gone.status, "NOT_FOUND", gone.message)
        let list = try system.call("account", friends + "ListFriends", token: bo.token)
        XCTAssertNil(list.at("friends.0"), "\(list)")
        // The address and the nickname are free again.
        let again = try signUp("ana")
        XCTAssertNotEqual(again.id, ana.id)
        let results = system.stopAll()
        for (service, result) in results {
            XCTAssertEqual(result.exitCode, 0, "\(service) stopped cleanly:\n\(result.errorOutput.suffix(2000))")
        }
    }
}
