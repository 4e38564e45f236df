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

    /// A file as `DevelopmentMailSender` writes it.
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
