import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService

/// What the identity tests share: a fixture serving the repository's four apps, calls in an app, and
/// the SMS a person would read.
extension AccountFixture {
    /// The repository's app files (`deploy/apps`).
    static let appsFolder = ServiceHarness.repositoryApps

    /// An AccountService serving every app, in development mode unless told otherwise.
    static func startServingApps(
        development: Bool = true, configure: @escaping (inout ServiceOptions) -> Void = { _ in }
    ) async throws -> AccountFixture {
        try await start { options in
            options.apps = appsFolder
            options.development = development
            configure(&options)
        }
    }

    var identity: YediAccount.Identity.Client { YediAccount.Identity.Client(client) }

    /// An anonymous call in `app` (`yedi-app`).
    static func inApp(_ app: String) -> CallOptions { CallOptions(timeout: .seconds(10), metadata: ["yedi-app": app]) }

    /// The code of the latest SMS to `number` sent after `count` earlier ones, read from its text as a
    /// person reads it (six digits), once the outbox has written it.
    func textedCode(to number: String, after count: Int = 0) async throws -> String {
        let folder = service.environment.dataDirectory.appendingPathComponent("sent-sms")
        var code: String?
        _ = try await eventually(timeout: 20) {
            let texts = ((try? DevelopmentFileSender.messages(in: folder)) ?? []).filter { $0.to == number }
            guard texts.count > count, let text = texts.sorted(by: { $0.sentAtMs < $1.sentAtMs }).last?.text,
                let range = text.range(of: #"\b[0-9]{6}\b"#, options: .regularExpression)
            else { return false }
            code = String(text[range])
            return true
        }
        guard let code else {
            throw RPCError(code: .deadlineExceeded, message: "no SMS to \(number) in \(folder.path)")
        }
        return code
    }

    /// `StartPhoneVerification` then `VerifyPhone` with the texted code, in `app`.
    func verifyPhone(_ phone: String, number: String, app: String = "slp", after count: Int = 0) async throws
        -> YediAccount.VerifyIdentityResponse
    {
        let started = try await identity.startPhoneVerification(.init(phone: phone), options: Self.inApp(app))
        let code = try await textedCode(to: number, after: count)
        return try await identity.verifyPhone(
            .init(code: .init(verificationID: started.verificationID, code: code)), options: Self.inApp(app))
    }
}

/// The provider verifiers the test service runs with: none real (the provider tests check those against
/// a fake provider); the development verifier stands in front.
enum TestIdentityProviders {
    static let verifiers: [String: any IdentityVerifier] = [:]
}
