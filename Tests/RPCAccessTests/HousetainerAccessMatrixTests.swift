import Foundation
import ProtoTestSupport
import RPCAccess
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Housetainer beside the other apps, as the generated access rules say (issue 29): a Housetainer member
/// or admin reaches Housetainer's methods and, of the rest, only what every app or Housetainer is
/// declared for; YeDi and SLP tokens, and anonymous callers of other apps, are refused every Housetainer
/// method. Handlers accept everything, so a refusal can only come from a rule.
final class HousetainerAccessMatrixTests: XCTestCase {
    /// The methods outside `yedi.housetainer` a Housetainer caller reaches.
    static let sharedMethods: Set<String> = [
        "yedi.account.AccountService/RefreshSession", "yedi.account.AccountService/SignOut",
        "yedi.account.AccountService/DeleteAccount",
        // Sign-in with a provider; CompleteIdentitySignUp refuses Housetainer's tickets in its handler.
        "yedi.account.Identity/VerifyProvider", "yedi.account.Identity/CheckNickname",
        "yedi.account.Identity/CompleteIdentitySignUp",
        "yedi.account.Notifications/RegisterDevice", "yedi.account.Notifications/UnregisterDevice",
        "yedi.account.Notifications/ListNotifications", "yedi.account.Notifications/CountUnread",
        "yedi.account.Notifications/MarkRead",
        "yedi.content.ContentService/UploadImage", "yedi.content.ContentService/GetImage",
        // The operators' rule admits every app's admin; the handler acts on the caller's app's content only.
        "yedi.content.ContentModeration/ModerateContent",
    ]

    func testHousetainerMatrixTokensOfEachAppReachOnlyTheirMethods() async throws {
        let pki = try TestPKI.get()
        let server = try await RunningServer.start(
            pki: pki, services: YediProtoCatalog.services.map(AcceptAllService.init),
            interceptors: [
                AuthenticationInterceptor(
                    verifier: try pki.tokenVerifier(), servedApps: Set(TestAccessToken.servedApps.keys))
            ])
        let client = try RPCClient(
            configuration: pki.rpcClientConfiguration(ports: [server.port], identity: "yedi-probe"))
        let run = Task { await client.run() }
        let member = "Bearer " + (try TestAccessToken.issue(userID: "u-ht-member", role: "member", app: "housetainer"))
        let admin = "Bearer " + (try TestAccessToken.issue(userID: "u-ht-admin", role: "admin", app: "housetainer"))

        var reached: Set<String> = []
        for service in YediProtoCatalog.services {
            for method in service.methods {
                let housetainer = method.fullName.hasPrefix("yedi.housetainer.")
                for (token, app) in [(member, nil), (admin, nil), (nil, "housetainer")] as [(String?, String?)] {
                    let got = await AccessRuleTests.call(method, client: client, authorization: token, app: app)
                    if got == .ok {
                        reached.insert(method.fullName)
                    } else if !housetainer {
                        XCTAssertTrue(
                            [.permissionDenied, .unauthenticated].contains(got), "\(method.fullName): \(got)")
                    }
                }
                guard housetainer else { continue }
                // Anonymous callers of a USER method are asked to sign in; of a PUBLIC one, denied.
                var anonymous = StatusCode.unauthenticated
                if case .anyone? = method.access { anonymous = .permissionDenied }
                let others: [(String?, String?, StatusCode)] = [
                    (TestAccessToken.customer.authorization, nil, .permissionDenied),
                    (TestAccessToken.slpMember.authorization, nil, .permissionDenied),
                    (TestAccessToken.unservedAppMember.authorization, nil, .unauthenticated),
                    (nil, nil, anonymous),
                    (nil, "slp", anonymous),
                    (TestAccessToken.customer.authorization, "housetainer", .permissionDenied),
                ]
                for (token, app, want) in others {
                    let got = await AccessRuleTests.call(method, client: client, authorization: token, app: app)
                    XCTAssertEqual(
                        got, want,
                        "\(method.fullName) called with \(token == nil ? "no token" : "a token") in \(app ?? "-")")
                }
            }
        }
        XCTAssertEqual(reached.filter { !$0.hasPrefix("yedi.housetainer.") }, Self.sharedMethods.union(Self.moderation))
        XCTAssertTrue(reached.contains("yedi.housetainer.Members/SignIn"))
        client.beginGracefulShutdown()
        await run.value
        await server.stop()
    }

    /// Reports, inquiries and their answers are the platform's moderation, served to every app.
    static let moderation: Set<String> = Set(
        YediProtoCatalog.services.filter { $0.fullName == "yedi.moderation.Moderation" }.flatMap(\.methods)
            .filter { $0.access.map { if case .service = $0 { false } else { true } } ?? false }.map(\.fullName))
}
