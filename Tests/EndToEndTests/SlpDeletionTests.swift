import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

/// SLP on the four processes (issue 28, "Deletion"): two members sign up by phone, match and chat; one
/// deletes the account with a fresh code; afterwards no table or file of any service names the member or
/// their number, the ex-partner is general, and the number signs up again.
final class SlpDeletionTests: RunningSystemTestCase {
    private let identity = "yedi.account.Identity/"
    private let matching = "yedi.slp.Matching/"

    /// A texted code through the development SMS files: StartPhoneVerification, then the code of that
    /// verification as a person reads it.
    private func code(_ phone: String) throws -> (verificationID: String, code: String) {
        let started = try system.call(
            "account", identity + "StartPhoneVerification", #"{"phone": "\#(phone)"}"#, app: "slp")
        let verificationID = started.string("verificationId")
        let code = try system.runProbe([
            "outbox-messages", "--kind", "sms",
            "--folder", system.dataDirectory("account").appendingPathComponent("sent-sms").path,
            "--verification-id", verificationID, "--value", "code", "--wait", "20",
        ])
        guard code.exitCode == 0 else { throw E2EFailure("no SMS for \(phone): \(code.errorOutput)") }
        return (verificationID, code.output.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// Phone verification and SignUp in one call; the member's id and access token.
    private func signUp(_ phone: String, nickname: String) throws -> (id: String, token: String) {
        let (verificationID, digits) = try code(phone)
        let verified = try system.call(
            "account", identity + "VerifyPhone",
            #"{"code": {"verificationId": "\#(verificationID)", "code": "\#(digits)"}}"#, app: "slp")
        let ticket = verified.string("signUp.ticket")
        guard !ticket.isEmpty else { throw E2EFailure("no ticket for \(phone): \(verified)") }
        let me = try system.call("account", matching + "GetMe", #"{"ticket": "\#(ticket)"}"#, app: "slp")
        XCTAssertEqual(me.string("outcome"), "GET_ME_OUTCOME_UNREGISTERED")
        let created = try system.call(
            "account", matching + "SignUp",
            #"""
            {"ticket": "\#(ticket)", "nickname": "\#(nickname)", "birthDate": {"year": 1999, "month": 5, "day": 1},
             "email": "\#(nickname)@example.com", "gender": "GENDER_FEMALE", "pushToken": "push-\#(phone)"}
            """#, app: "slp")
        XCTAssertEqual(created.string("outcome"), "SIGN_UP_OUTCOME_SIGNED_UP", "\(created)")
        return (created.string("account.user.id"), created.string("account.session.accessToken"))
    }

    /// Moves AccountService's development clock past the 4-second resend cooldown of a number.
    private func passCooldown() throws {
        try system.call("account", "yedi.runtime.DevClock/AdvanceClock", #"{"seconds": 5}"#, asOperator: true)
    }

    func testSlpADeletedMemberLeavesNothingBehindAndTheNumberSignsUpAgain() throws {
        let phone = "010-4321-8765"
        let (number, local) = ("+821043218765", "01043218765")
        let gone = try signUp(phone, nickname: "떠날이")
        let stays = try signUp("010-5555-6666", nickname: "남을이")

        // Matched, and a message in their match room.
        for token in [gone.token, stays.token] {
            let entered = try system.call(
                "account", matching + "EnterQueue", #"{"latitude": 37.5665, "longitude": 126.978}"#, token: token)
            XCTAssertEqual(entered.string("outcome"), "ENTER_QUEUE_OUTCOME_ENTERED")
        }
        // The member who will go asks (the partner's inbox and push name the asker), the partner accepts.
        try system.call("account", matching + "Request", #"{"otherId": "\#(stays.id)"}"#, token: gone.token)
        let accepted = try system.call(
            "account", matching + "Accept", #"{"otherId": "\#(gone.id)"}"#, token: stays.token)
        XCTAssertEqual(accepted.string("outcome"), "ACCEPT_OUTCOME_MATCHED")
        let matchID = accepted.string("matchId")
        try system.callRetryingUnavailable(
            "chat", "yedi.chat.ChatService/SendMessage",
            #"{"roomId": "\#(matchID)", "text": {"text": "내일 10시에 봬요"}}"#, token: gone.token)

        // Deleting a password-less account takes a fresh code.
        let refused = try system.failingCall(
            "account", "yedi.account.AccountService/DeleteAccount", "{}", token: gone.token)
        XCTAssertEqual(refused.status, "FAILED_PRECONDITION", refused.message)
        try passCooldown()
        let fresh = try code(phone)
        try system.call(
            "account", "yedi.account.AccountService/DeleteAccount",
            #"{"proof": {"phone": {"verificationId": "\#(fresh.verificationID)", "code": "\#(fresh.code)"}}}"#,
            token: gone.token)

        let state = try system.call("account", matching + "GetState", token: stays.token)
        XCTAssertEqual(state.string("state"), "MATCHING_STATE_GENERAL", "the ex-partner is general: \(state)")
        // Account's outbox delivers the purge to the other services; then nothing names the member.
        let data = system.root.appendingPathComponent("data")
        let clean = try eventually(timeout: 30) {
            try DataScan.find(gone.id, in: data).isEmpty && DataScan.find(number, in: data).isEmpty
        }
        for needle in [gone.id, number, local] {
            let findings = try DataScan.find(needle, in: data)
            XCTAssertEqual(findings.map(\.place), [], "\(needle) is still somewhere (purged: \(clean))")
        }
        // The development senders' files: the request's push to the partner named the member by id and
        // by nickname; neither is in any sent mail, SMS or push.
        for kind in ["sent-mail", "sent-sms", "sent-push"] {
            let folder = system.dataDirectory("account").appendingPathComponent(kind)
            let findings = try DataScan.find(gone.id, in: folder) + DataScan.find("떠날이", in: folder)
            XCTAssertEqual(findings.map(\.place), [], "a \(kind) file names the deleted member")
        }
        let rooms = try system.call("chat", "yedi.chat.ChatService/ListRooms", token: stays.token)
        XCTAssertEqual(rooms.string("rooms.0.id"), "", "the match room went with the member: \(rooms)")

        // The number signs up again, as a new member.
        try passCooldown()
        let again = try signUp(phone, nickname: "돌아온이")
        XCTAssertNotEqual(again.id, gone.id)
        for (service, result) in system.stopAll() {
            XCTAssertEqual(result.exitCode, 0, "\(service) stopped cleanly:\n\(result.errorOutput.suffix(2000))")
        }
    }
}
