import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

/// A second app on the same four processes (issue 26, "Show it"): an SLP member signs up by phone with
/// the code read from the development SMS file, registers a device and gets a push in the development
/// push files, and reaches nothing of YeDi's.
final class SecondAppJourneyTests: RunningSystemTestCase {
    private let identity = "yedi.account.Identity/"

    func testTenantAnSLPMemberSignsUpByPhoneGetsAPushAndSeesNothingOfYeDi() throws {
        // A YeDi designer's post exists, to be out of reach.
        let designer = try system.signUp(
            #"""
            {"email": "jiho@example.com", "password": "scissors99", "name": "박지호", "phone": "01098765432",
             "gender": "GENDER_MALE", "birthDate": {"year": 1988, "month": 11, "day": 3}, "role": "ROLE_DESIGNER",
             "designer": {"description": "펌", "skills": ["펌"], "rank": "DESIGNER_RANK_PRINCIPAL",
               "shop": {"name": "살롱", "phone": "02-555-1234", "address": {"city": "서울", "district": "강남구",
                 "detail": "3층"}, "latitude": 37.5, "longitude": 127.03}}}
            """#)
        let designerID = designer.string("user.id")
        XCTAssertFalse(designerID.isEmpty)

        // Phone sign-up in SLP: the code comes by SMS (a development file a person can read).
        let started = try system.call(
            "account", identity + "StartPhoneVerification", #"{"phone": "010-2345-6789"}"#, app: "slp")
        let verificationID = started.string("verificationId")
        let code = try system.runProbe([
            "outbox-messages", "--kind", "sms",
            "--folder", system.dataDirectory("account").appendingPathComponent("sent-sms").path,
            "--to", "+821023456789", "--value", "code", "--wait", "20",
        ])
        XCTAssertEqual(code.exitCode, 0, code.errorOutput)
        let digits = code.output.trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertEqual(digits.count, 6, "a 6-digit code: \(digits)")
        let verified = try system.call(
            "account", identity + "VerifyPhone",
            #"{"code": {"verificationId": "\#(verificationID)", "code": "\#(digits)"}}"#, app: "slp")
        let ticket = verified.string("signUp.ticket")
        XCTAssertFalse(ticket.isEmpty, "an unknown number gets a sign-up ticket: \(verified)")
        let member = try system.call(
            "account", identity + "CompleteIdentitySignUp", #"{"ticket": "\#(ticket)", "nickname": "모래"}"#,
            app: "slp")
        let token = member.string("session.accessToken")
        let memberID = member.string("user.id")
        XCTAssertFalse(token.isEmpty)

        // A device, and a push to it when another service notifies the member.
        try system.call(
            "account", "yedi.account.Notifications/RegisterDevice",
            #"{"platform": "PUSH_PLATFORM_FCM", "token": "slp-device-1"}"#, token: token)
        try system.call(
            "account", "yedi.account.Notifications/Notify",
            #"""
            {"userId": "\#(memberID)", "app": "slp", "kind": "match-request", "title": "스터디 요청",
             "body": "근처에서 요청이 왔어요"}
            """#, identity: "chat")
        let push = try system.runProbe([
            "outbox-messages", "--kind", "push",
            "--folder", system.dataDirectory("account").appendingPathComponent("sent-push").path,
            "--to", "slp-device-1", "--wait", "20",
        ])
        XCTAssertEqual(push.exitCode, 0, push.errorOutput)
        XCTAssertTrue(push.output.contains("스터디 요청"), push.output)
        let inbox = try system.call("account", "yedi.account.Notifications/ListNotifications", token: token)
        XCTAssertEqual(inbox.string("notifications.0.kind"), "match-request")

        // Nothing of YeDi's answers the SLP member, in any service.
        for (service, method, request) in [
            ("account", "yedi.account.AccountService/GetMe", "{}"),
            ("account", "yedi.account.AccountService/GetDesigner", #"{"designerId": "\#(designerID)"}"#),
            ("content", "yedi.content.ContentService/GetFeed", "{}"),
            ("booking", "yedi.booking.BookingService/ListReservations", "{}"),
            ("chat", "yedi.chat.ChatService/OpenRoom", #"{"designerId": "\#(designerID)"}"#),
        ] {
            let refused = try system.failingCall(service, method, request, token: token)
            XCTAssertEqual(refused.status, "PERMISSION_DENIED", "\(method): \(refused.message)")
        }
        // Chat's room methods serve SLP's match rooms too (docs/slp.md): the member has none yet.
        let rooms = try system.call("chat", "yedi.chat.ChatService/ListRooms", token: token)
        XCTAssertEqual(rooms.string("rooms.0.id"), "")
        // Nor does an anonymous caller naming SLP reach YeDi's public reads.
        let result = try system.runProbe([
            "call", system.address("content"), "yedi.content.ContentService/GetFeed", "{}", "-H", "yedi-app: slp",
        ])
        XCTAssertNotEqual(result.exitCode, 0)
        XCTAssertTrue(result.errorOutput.contains("PERMISSION_DENIED"), result.errorOutput)
    }
}
