import AccessTokens
import Foundation
import RPCAccess
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Zipadoo's cross-app matrix (issue 30), over TLS through `AuthenticationInterceptor` with accept-all
/// handlers (so a refusal can only be the generated rule): every Zipadoo method called by a member, an
/// anonymous Zipadoo caller, an anonymous YeDi caller, and YeDi, SLP and Housetainer members; every other
/// method called with a Zipadoo token, which reaches only the list below.
final class ZipadooAccessMatrixTests: XCTestCase {
    static let apps: [AppID: Set<UserRole>] = [
        .yedi: [.customer, .designer], "slp": ["member"], "housetainer": ["member"], "zipadoo": ["member"],
    ]

    enum Caller: String, CaseIterable {
        case zipadooMember, zipadooAnonymous, yediAnonymous, yediCustomer, slpMember, housetainerMember, booking
    }

    /// What each caller gets from a Zipadoo method with `rule`.
    static func expected(_ rule: AccessRule, _ caller: Caller) -> StatusCode {
        switch (rule, caller) {
        case (.service, .booking): return .ok
        case (.service, .zipadooAnonymous), (.service, .yediAnonymous): return .unauthenticated
        case (.service, _): return .permissionDenied
        case (_, .booking): return .permissionDenied
        case (.user, .zipadooMember): return .ok
        case (.user, .zipadooAnonymous), (.user, .yediAnonymous): return .unauthenticated
        case (.user, _): return .permissionDenied
        case (.anyone, .zipadooMember), (.anyone, .zipadooAnonymous): return .ok
        case (.anyone, _): return .permissionDenied
        }
    }

    func testZipadooCrossAppMatrix() async throws {
        let pki = try TestPKI.get()
        let key = try pki.tokenSigningKey()
        func token(_ app: AppID, _ role: UserRole) throws -> String {
            try AccessTokenIssuer(signingKey: key).issue(userID: "u-\(app)", role: role, sessionID: "s", app: app).token
        }
        let tokens: [Caller: String] = [
            .zipadooMember: try token("zipadoo", "member"), .yediCustomer: try token(.yedi, .customer),
            .slpMember: try token("slp", "member"), .housetainerMember: try token("housetainer", "member"),
        ]
        let verifier = JWTVerifier(
            keys: [
                try TokenVerificationKey.load(pemFile: pki.devPKI.appendingPathComponent("token-signing.pub.pem").path)
            ],
            apps: Self.apps)
        let server = try await RunningServer.start(
            pki: pki, services: YediProtoCatalog.services.map(AcceptEverything.init),
            interceptors: [AuthenticationInterceptor(verifier: verifier, servedApps: Set(Self.apps.keys))])
        var clients: [String: RPCClient] = [:]
        var runs: [Task<Void, Never>] = []
        for identity in ["yedi-probe", "booking"] {
            let client = try RPCClient(
                configuration: pki.rpcClientConfiguration(ports: [server.port], identity: identity))
            clients[identity] = client
            runs.append(Task { await client.run() })
        }
        func call(_ method: MethodDescriptor, _ caller: Caller) async -> StatusCode {
            var options = CallOptions.defaults
            if let token = tokens[caller] { options.metadata["authorization"] = "Bearer \(token)" }
            if caller == .zipadooAnonymous { options.metadata[AuthenticationInterceptor.appMetadataKey] = "zipadoo" }
            let client = clients[caller == .booking ? "booking" : "yedi-probe"]!
            do {
                switch method.kind {
                case .unary: _ = try await client.unary(method, payload: [], options: options)
                case .serverStreaming:
                    try await client.serverStreaming(method, payload: [], options: options) { stream in
                        for try await _ in stream {}
                    }
                }
                return .ok
            } catch let error as RPCError {
                return error.code
            } catch {
                return .unknown
            }
        }

        let methods = YediProtoCatalog.services.flatMap(\.methods)
        let zipadoo = methods.filter { $0.fullName.hasPrefix("yedi.zipadoo.") }
        XCTAssertEqual(zipadoo.count, 21, "Friends (10) and Promises (11)")
        for method in zipadoo {
            let rule = try XCTUnwrap(method.access)
            for caller in Caller.allCases {
                let got = await call(method, caller)
                XCTAssertEqual(got, Self.expected(rule, caller), "\(method.fullName) called by \(caller.rawValue)")
            }
        }
        var reached: Set<String> = []
        for method in methods where !method.fullName.hasPrefix("yedi.zipadoo.") {
            let got = await call(method, .zipadooMember)
            XCTAssertTrue([.ok, .permissionDenied].contains(got), "\(method.fullName): \(got)")
            if got == .ok { reached.insert(method.fullName) }
        }
        XCTAssertEqual(
            reached,
            [
                // Sessions and the account: the platform's, for every app (SignIn and ChangePassword name Zipadoo).
                "yedi.account.AccountService/SignIn", "yedi.account.AccountService/ChangePassword",
                "yedi.account.AccountService/RefreshSession", "yedi.account.AccountService/SignOut",
                "yedi.account.AccountService/DeleteAccount",
                // Kakao sign-in and nicknames (deploy/apps/zipadoo.json lists kakao).
                "yedi.account.Identity/VerifyProvider", "yedi.account.Identity/CheckNickname",
                "yedi.account.Identity/CompleteIdentitySignUp",
                // Every app's devices, inbox and moderation (docs/platform.md), in the caller's own app.
                "yedi.account.Notifications/RegisterDevice", "yedi.account.Notifications/UnregisterDevice",
                "yedi.account.Notifications/ListNotifications", "yedi.account.Notifications/CountUnread",
                "yedi.account.Notifications/MarkRead", "yedi.moderation.Moderation/ReportMember",
                "yedi.moderation.Moderation/SubmitInquiry", "yedi.moderation.Moderation/ListMyCases",
                // Profile images.
                "yedi.content.ContentService/UploadImage", "yedi.content.ContentService/GetImage",
            ],
            "the non-Zipadoo methods a Zipadoo token reaches")

        for client in clients.values { client.beginGracefulShutdown() }
        for run in runs { await run.value }
        await server.stop()
    }
}

/// Serves every method of a service descriptor: OK with an empty response, streams end at once.
private struct AcceptEverything: RPCService {
    let serviceDescriptor: ServiceDescriptor

    init(_ descriptor: ServiceDescriptor) { serviceDescriptor = descriptor }

    func registerMethods(with router: inout RPCRouter) {
        for method in serviceDescriptor.methods {
            router.registerRaw(method) { _, _ in [] }
        }
    }
}
