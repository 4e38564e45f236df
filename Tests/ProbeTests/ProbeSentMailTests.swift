import Foundation
import RPCTestSupport
import XCTest

/// `yedi-probe sent-mail` reads the development mailbox: filters by address and sign-up, prints one value
/// for scripts, and exits 9 when nothing matches.
final class ProbeSentMailTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-sent-mail-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try write(id: "job-1", to: "minji@example.com", code: "111111", verificationID: "v-1", at: 1_000)
        try write(id: "job-2", to: "jiho@example.com", code: "222222", verificationID: "v-2", at: 2_000)
        try write(id: "job-3", to: "minji@example.com", code: "333333", verificationID: "v-3", at: 3_000)
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(at: folder)
    }

    /// A file as `DevelopmentFileSender` writes it.
    private func write(id: String, to: String, code: String, verificationID: String, at sentAtMs: Int64) throws {
        let object: [String: Any] = [
            "id": id, "to": to, "subject": "[Yedi] 가입 인증 코드 \(code)", "text": "인증 코드: \(code)",
            "template": "sign-up-code", "values": ["code": code, "verification_id": verificationID],
            "sentAtMs": sentAtMs,
        ]
        try JSONSerialization.data(withJSONObject: object).write(to: folder.appendingPathComponent("\(id).json"))
    }

    func testListsFiltersAndPrintsOneValue() throws {
        let all = try probe(["sent-mail", "--folder", folder.path, "--wait", "0"])
        assertExit(all, 0)
        let lines = all.output.split(separator: "\n")
        XCTAssertEqual(lines.count, 3)
        XCTAssertTrue(lines[0].contains(#""id":"job-1""#), String(lines[0]))

        let newestForMinji = try probe([
            "sent-mail", "--folder", folder.path, "--to", "MinJi@example.com", "--value", "code",
        ])
        assertExit(newestForMinji, 0)
        XCTAssertEqual(newestForMinji.output, "333333\n")

        let oneSignUp = try probe(["sent-mail", "--folder", folder.path, "--verification-id", "v-2", "--value", "code"])
        XCTAssertEqual(oneSignUp.output, "222222\n")
    }

    func testNoMatchExitsNine() throws {
        let none = try probe(["sent-mail", "--folder", folder.path, "--to", "nobody@example.com", "--wait", "0.2"])
        assertExit(none, 9)
        XCTAssertTrue(none.errorOutput.contains("no mail matches"), none.errorOutput)
        let noValue = try probe(["sent-mail", "--folder", folder.path, "--value", "missing", "--wait", "0"])
        assertExit(noValue, 9)
        let noFolder = try probe(["sent-mail", "--folder", folder.path + "-missing", "--wait", "0"])
        assertExit(noFolder, 8)
    }
}

/// `yedi-probe outbox-messages --kind sms|push` reads the development SMS and push folders, in the same
/// format as mail; a wrong kind is a usage error.
final class ProbeOutboxMessagesTests: XCTestCase {
    func testListsSmsAndPushByKindAndPrintsOneValue() throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-outbox-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: data) }
        let sms = data.appendingPathComponent("sent-sms")
        let push = data.appendingPathComponent("sent-push")
        for folder in [sms, push] {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        }
        // Files as `DevelopmentFileSender` writes them.
        try JSONSerialization.data(withJSONObject: [
            "id": "job-1", "kind": "sms", "to": "+821012345678", "subject": "", "text": "[Yedi] 인증 코드 654321",
            "template": "phone-sign-in-code", "values": ["code": "654321"], "sentAtMs": 1_000,
        ]).write(to: sms.appendingPathComponent("job-1.json"))
        try JSONSerialization.data(withJSONObject: [
            "id": "job-2", "kind": "push", "to": "device-1", "subject": "내일 예약", "text": "오후 3시",
            "template": "reservation-reminder", "values": [:] as [String: String], "sentAtMs": 2_000,
        ]).write(to: push.appendingPathComponent("job-2.json"))

        let code = try probe([
            "outbox-messages", "--kind", "sms", "--folder", sms.path, "--to", "+821012345678", "--value", "code",
            "--wait", "0",
        ])
        assertExit(code, 0)
        XCTAssertEqual(code.output, "654321\n")

        let pushes = try probe(["outbox-messages", "--kind", "push", "--folder", push.path, "--wait", "0"])
        assertExit(pushes, 0)
        XCTAssertTrue(pushes.output.contains(#""kind":"push""#), pushes.output)
        XCTAssertTrue(pushes.output.contains(#""to":"device-1""#), pushes.output)
        XCTAssertEqual(pushes.output.split(separator: "\n").count, 1)

        let noSms = try probe([
            "outbox-messages", "--kind", "sms", "--folder", sms.path, "--to", "+8210", "--wait", "0",
        ])
        assertExit(noSms, 9)
        XCTAssertTrue(noSms.errorOutput.contains("no sms matches"), noSms.errorOutput)

        let badKind = try probe(["outbox-messages", "--kind", "fax", "--folder", sms.path, "--wait", "0"])
        XCTAssertNotEqual(badKind.exitCode, 0)
        XCTAssertTrue(badKind.errorOutput.contains("--kind must be one of mail, sms, push"), badKind.errorOutput)
    }
}
