import ArgumentParser
import Foundation
import ServiceRuntime
import XCTest

/// `--mail-api-url` & co.: each provider needs its other options and a credential, from a file (read at
/// each use) or the environment, never from a flag; a credential never prints.
final class OutsideSenderConfigurationTests: XCTestCase {
    private let defaults = ServiceDefaults(name: "account", port: 7001, metricsPort: 9101)
    private static let fixtureKey = "TEST-FIXTURE-NOT-A-REAL-key"

    private func resolve(_ arguments: [String], _ environment: [String: String] = [:]) throws -> ServiceConfiguration {
        try ServiceConfiguration.resolve(
            options: try ServiceOptions.parse(arguments), environment: environment, defaults: defaults)
    }

    private func problem(_ arguments: [String], _ environment: [String: String] = [:]) -> String {
        do {
            _ = try resolve(arguments, environment)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    func testWithoutAProviderEveryKindGoesToDevelopmentFiles() throws {
        let senders = try resolve([]).senders
        XCTAssertNil(senders.mail)
        XCTAssertNil(senders.sms)
        XCTAssertNil(senders.push)
    }

    func testEachProviderFromFlagsWithItsCredentialInTheEnvironment() throws {
        let configuration = try resolve(
            [
                "--mail-api-url", "https://api.sendgrid.com/", "--mail-from", "no-reply@yedi.example",
                "--sms-api-url", "https://api-sms.cloud.toast.com", "--sms-app-key", "app", "--sms-sender-number",
                "0215440000", "--push-api-url", "https://fcm.googleapis.com", "--push-project", "yedi",
            ],
            [
                "YEDI_MAIL_API_KEY": Self.fixtureKey, "YEDI_SMS_API_KEY": Self.fixtureKey,
                "YEDI_PUSH_ACCESS_TOKEN": Self.fixtureKey,
            ])
        let mail = try XCTUnwrap(configuration.senders.mail)
        XCTAssertEqual(mail.url, "https://api.sendgrid.com", "the trailing slash is dropped")
        XCTAssertEqual(try mail.apiKey.read().value, Self.fixtureKey)
        XCTAssertEqual(try XCTUnwrap(configuration.senders.sms).senderNumber, "0215440000")
        XCTAssertEqual(try XCTUnwrap(configuration.senders.push).project, "yedi")
        // However the configuration is printed, the credentials are not in it.
        for text in ["\(configuration)", String(reflecting: configuration), "\(try mail.apiKey.read())"] {
            XCTAssertFalse(text.contains(Self.fixtureKey), text)
        }
        var dumped = ""
        dump(configuration, to: &dumped)
        XCTAssertFalse(dumped.contains(Self.fixtureKey), dumped)
    }

    func testACredentialFileIsCheckedAtStartAndReadAtEachUse() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("yedi-sms-key-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let arguments = [
            "--sms-api-url", "http://127.0.0.1:1", "--sms-app-key", "app", "--sms-sender-number", "0215440000",
            "--sms-api-key-file", file.path,
        ]
        XCTAssertTrue(problem(arguments).contains("--sms-api-key-file (YEDI_SMS_API_KEY_FILE)"), problem(arguments))
        try "  \(Self.fixtureKey)-1\n".write(to: file, atomically: true, encoding: .utf8)
        let sms = try XCTUnwrap(try resolve(arguments).senders.sms)
        XCTAssertEqual(try sms.secretKey.read().value, "\(Self.fixtureKey)-1")
        try "\(Self.fixtureKey)-2".write(to: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try sms.secretKey.read().value, "\(Self.fixtureKey)-2", "a rewritten file rotates the key")
    }

    func testPushTakesAServiceAccountKeyOrAnAccessTokenButNotBoth() throws {
        let push = ["--push-api-url", "https://fcm.googleapis.com", "--push-project", "yedi"]
        let key = try XCTUnwrap(try resolve(push, ["YEDI_PUSH_SERVICE_ACCOUNT": Self.fixtureKey]).senders.push)
        guard case .serviceAccountKey(let source) = key.credential else {
            return XCTFail("a service-account key: \(key.credential)")
        }
        XCTAssertEqual(try source.read().value, Self.fixtureKey)
        let token = try XCTUnwrap(try resolve(push, ["YEDI_PUSH_ACCESS_TOKEN": Self.fixtureKey]).senders.push)
        guard case .accessToken = token.credential else { return XCTFail("an access token: \(token.credential)") }
        let both = problem(
            push, ["YEDI_PUSH_SERVICE_ACCOUNT": Self.fixtureKey, "YEDI_PUSH_ACCESS_TOKEN": Self.fixtureKey])
        XCTAssertTrue(both.contains("not both"), both)
        XCTAssertFalse(both.contains(Self.fixtureKey), both)
        let neither = problem(push)
        XCTAssertTrue(neither.contains("--push-service-account-file"), neither)
        XCTAssertTrue(neither.contains("YEDI_PUSH_SERVICE_ACCOUNT)"), neither)
    }

    func testAProviderWithoutItsOtherOptionsIsRefusedNamingThem() {
        let noKey = problem(["--mail-api-url", "https://api.sendgrid.com", "--mail-from", "a@b.example"])
        XCTAssertTrue(noKey.contains("--mail-api-key-file (YEDI_MAIL_API_KEY_FILE)"), noKey)
        XCTAssertTrue(noKey.contains("YEDI_MAIL_API_KEY)"), noKey)
        let noFrom = problem(["--mail-api-url", "https://api.sendgrid.com"], ["YEDI_MAIL_API_KEY": Self.fixtureKey])
        XCTAssertTrue(noFrom.contains("--mail-from"), noFrom)
        XCTAssertTrue(problem(["--push-api-url", "fcm.googleapis.com"]).contains("not an http(s) URL"))
        XCTAssertTrue(problem(["--push-api-url", "https://fcm.googleapis.com"]).contains("--push-project"))
        let noNumber = problem(["--sms-api-url", "https://x.example", "--sms-app-key", "a"], ["YEDI_SMS_API_KEY": "k"])
        XCTAssertTrue(noNumber.contains("--sms-sender-number"), noNumber)
    }
}
