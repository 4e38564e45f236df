import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

/// Housetainer on the four processes (issue 29, "Deletion"): a member joins with an invitation, invites
/// someone, posts an event with an image, comments, bookmarks and is blocked; then deletes the account with
/// a fresh provider assertion. Afterwards `DataScan` finds neither their id, nor their address, nor the
/// address of the person they invited in any service's data folder, the development mail files included.
final class HousetainerDeletionTests: RunningSystemTestCase {
    private let members = "yedi.housetainer.Members/"
    private let community = "yedi.housetainer.Community/"
    private let terms =
        #"[{"kind": "terms", "version": "2024-01"}, {"kind": "privacy", "version": "2024-01"}, {"kind": "eula", "version": "1.0"}]"#

    private func assertion(_ subject: String) -> String {
        #"{"provider": "google", "token": "dev:google:\#(subject):\#(subject)@example.kr"}"#
    }

    /// Signs in as `subject` (address `<subject>@example.kr`) and signs up with `code`.
    private func join(_ subject: String, nickname: String, code: String) throws -> (id: String, token: String) {
        let signedIn = try system.call(
            "account", members + "SignIn", #"{"assertion": \#(assertion(subject))}"#, app: "housetainer")
        XCTAssertEqual(signedIn.string("outcome"), "SIGN_IN_OUTCOME_UNREGISTERED", "\(signedIn)")
        let joined = try system.call(
            "account", members + "SignUp",
            #"""
            {"ticket": "\#(signedIn.string("ticket"))", "code": "\#(code)", "nickname": "\#(nickname)",
             "acceptedTerms": \#(terms)}
            """#, app: "housetainer")
        return (joined.string("memberId"), joined.string("session.accessToken"))
    }

    /// The code of the newest invitation mailed to `email`, read from the development mail files.
    private func mailedCode(to email: String) throws -> String {
        let code = try system.runProbe([
            "outbox-messages", "--kind", "mail",
            "--folder", system.dataDirectory("account").appendingPathComponent("sent-mail").path,
            "--to", email, "--value", "code", "--wait", "20",
        ])
        guard code.exitCode == 0 else { throw E2EFailure("no invitation mail to \(email): \(code.errorOutput)") }
        return code.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private func event(by token: String, title: String) throws -> String {
        let image = try system.call(
            "content", "yedi.content.ContentService/UploadImage",
            #"{"data": "\#(Data(SampleImages.png(width: 40, height: 30, seed: 3)).base64EncodedString())", "contentType": "image/png"}"#,
            token: token
        ).string("id")
        let at = Int64(Date().timeIntervalSince1970 * 1_000) + 86_400_000
        return try system.call(
            "content", community + "CreateEvent",
            #"""
            {"clientId": "\#(UUID().uuidString)", "fields": {"title": "\#(title)", "scheduleType": "SCHEDULE_TYPE_HOST",
             "atMs": "\#(at)", "detail": "저녁 초대", "imageIds": ["\#(image)"]}}
            """#, token: token
        ).string("id")
    }

    func testHousetainerDeletedMemberLeavesNothingInAnyServiceNorInTheDevelopmentMail() throws {
        // An admin (a token an operator mints with the probe) issues the first member's code: the
        // repository's app file requires one.
        let minted = try system.runProbe(["token", "--user", "ht-admin", "--role", "admin", "--app", "housetainer"])
        XCTAssertEqual(minted.exitCode, 0, minted.errorOutput)
        let admin = minted.output.trimmingCharacters(in: .whitespacesAndNewlines)
        try system.call(
            "account", members + "IssueInvitation", #"{"inviteeEmail": "host@example.kr", "inviteeName": "호스트"}"#,
            token: admin)
        let host = try join("host", nickname: "호스트", code: try mailedCode(to: "host@example.kr"))
        try system.call(
            "account", members + "CreateInvitation", #"{"inviteeEmail": "gone@example.kr", "inviteeName": "게스트"}"#,
            token: host.token)
        let gone = try join("gone", nickname: "떠날이", code: try mailedCode(to: "gone@example.kr"))
        XCTAssertFalse(gone.id.isEmpty)
        // Their own invitation, still unused: its mail holds the invitee's address.
        try system.call(
            "account", members + "CreateInvitation", #"{"inviteeEmail": "friend@example.com", "inviteeName": "친구"}"#,
            token: gone.token)
        XCTAssertFalse(try mailedCode(to: "friend@example.com").isEmpty)

        let goneEvent = try event(by: gone.token, title: "떠날이의 집들이")
        let hostEvent = try event(by: host.token, title: "호스트의 집들이")
        // The admin shows both events to the other members.
        for eventID in [goneEvent, hostEvent] {
            try system.call(
                "content", community + "SetEventDisplay", #"{"eventId": "\#(eventID)", "displayed": true}"#,
                token: admin)
        }
        for (token, eventID, text) in [(host.token, goneEvent, "갈게요"), (gone.token, hostEvent, "저도요")] {
            try system.call(
                "content", community + "AddComment",
                #"{"clientId": "\#(UUID().uuidString)", "target": {"eventId": "\#(eventID)"}, "content": "\#(text)"}"#,
                token: token)
        }
        try system.call("content", community + "Bookmark", #"{"eventId": "\#(hostEvent)"}"#, token: gone.token)
        try system.call("content", community + "Bookmark", #"{"eventId": "\#(goneEvent)"}"#, token: host.token)
        try system.call("content", community + "Block", #"{"memberId": "\#(gone.id)"}"#, token: host.token)
        let notified = try system.call("content", community + "ListNotifications", "{}", token: host.token)
        XCTAssertEqual(notified.string("notifications.0.id"), "", "a blocked actor's notifications are hidden")

        let refused = try system.failingCall(
            "account", "yedi.account.AccountService/DeleteAccount", "{}", token: gone.token)
        XCTAssertEqual(refused.status, "FAILED_PRECONDITION", refused.message)
        try system.call(
            "account", "yedi.account.AccountService/DeleteAccount", #"{"proof": {"provider": \#(assertion("gone"))}}"#,
            token: gone.token)

        // Account's outbox delivers the purge to the other services; then nothing names the member.
        let data = system.root.appendingPathComponent("data")
        let needles = [gone.id, "gone@example.kr", "friend@example.com"]
        let clean = try eventually(timeout: 30) { try needles.allSatisfy { try DataScan.find($0, in: data).isEmpty } }
        for needle in needles {
            XCTAssertEqual(try DataScan.find(needle, in: data).map(\.place), [], "\(needle) (clean: \(clean))")
        }
        // The host's own things stay, without the member's comment and bookmark.
        let kept = try system.call(
            "content", community + "GetEvent", #"{"eventId": "\#(hostEvent)"}"#, token: host.token)
        XCTAssertEqual(kept.at("commentCount") as? Int, 0, "\(kept)")
        // The address may be invited again.
        try system.call(
            "account", members + "CreateInvitation", #"{"inviteeEmail": "gone@example.kr", "inviteeName": "다시"}"#,
            token: host.token)
        for (service, result) in system.stopAll() {
            XCTAssertEqual(result.exitCode, 0, "\(service) stopped cleanly:\n\(result.errorOutput.suffix(2000))")
        }
    }
}
