import Foundation
import ProtoTestSupport
import RPCAccess
import RPCTestSupport
import XCTest
import YediProto

@testable import RPCCore

/// Every method of every service in proto/ (YediProto's catalog) called by every kind of caller, over
/// TLS through `AuthenticationInterceptor`: the status must be what the method's generated access rule
/// says. Handlers accept everything, so a refusal can only come from the rule. A new RPC joins the
/// table by being generated.
final class AccessRuleTests: XCTestCase {
    /// Who calls: tokens come from `TestAccessToken`, identities from TestPKI's certificates.
    enum CallerKind: String, CaseIterable {
        case anonymous, customer, designer, expiredToken, tamperedToken, otherService, allowedService
        /// Tenants: an anonymous caller of SLP (`yedi-app: slp`), an SLP member, a member of an app the
        /// services do not serve, and a YeDi customer whose `yedi-app` names SLP.
        case slpAnonymous, slpMember, unservedAppMember, customerNamingAnotherApp

        /// The app and role a signed-in or anonymous caller acts in.
        var tenant: (app: AppID, role: UserRole?)? {
            switch self {
            case .anonymous: (.yedi, nil)
            case .slpAnonymous: ("slp", nil)
            case .customer: (.yedi, .customer)
            case .designer: (.yedi, .designer)
            case .slpMember: ("slp", "member")
            default: nil
            }
        }
    }

    /// What the rule promises the caller, written from AccessRule's documentation, independently of the
    /// interceptor's code.
    static func expected(_ rule: AccessRule, _ caller: CallerKind) -> StatusCode {
        switch caller {
        case .expiredToken, .tamperedToken, .unservedAppMember: return .unauthenticated
        case .customerNamingAnotherApp: return .permissionDenied
        case .allowedService:
            if case .service = rule { return .ok }
            return .permissionDenied
        case .otherService:
            if case .service(let callers) = rule, callers.isEmpty { return .ok }
            return .permissionDenied
        default: break
        }
        guard let (app, role) = caller.tenant else { return .unknown }
        switch rule {
        case .anyone(let apps):
            return apps.contains(app) ? .ok : .permissionDenied
        case .user(let apps, let roles):
            guard let role else { return .unauthenticated }
            return apps.contains(app) && (roles.isEmpty || roles.contains(role)) ? .ok : .permissionDenied
        case .service:
            return role == nil ? .unauthenticated : .permissionDenied
        }
    }

    static let services = ["account", "content", "booking", "chat"]

    /// The client certificate, token and `yedi-app` a caller kind uses for a method.
    static func credentials(
        _ caller: CallerKind, for rule: AccessRule
    ) -> (identity: String, token: TestAccessToken?, app: String?) {
        let allowed: String
        if case .service(let callers) = rule, let first = callers.sorted().first {
            allowed = first
        } else {
            allowed = "account"
        }
        switch caller {
        // The probe's certificate is a client certificate, not a service's: anonymous without a token.
        case .anonymous: return ("yedi-probe", nil, nil)
        case .slpAnonymous: return ("yedi-probe", nil, "slp")
        case .customer: return ("yedi-probe", .customer, nil)
        case .designer: return ("yedi-probe", .designer, nil)
        case .slpMember: return ("yedi-probe", .slpMember, nil)
        case .unservedAppMember: return ("yedi-probe", .unservedAppMember, nil)
        case .customerNamingAnotherApp: return ("yedi-probe", .customer, "slp")
        case .expiredToken: return ("yedi-probe", .expired, nil)
        case .tamperedToken: return ("yedi-probe", .tampered, nil)
        case .allowedService: return (allowed, nil, nil)
        case .otherService:
            guard case .service(let callers) = rule else { return ("chat", nil, nil) }
            return (services.first { !callers.contains($0) } ?? "yedi-probe", nil, nil)
        }
    }

    /// The tenant matrix too: no method of one app answers another app's users or anonymous callers.
    func testTenantMatrixEveryMethodAnswersEachCallerOfEachAppAsItsAccessRuleSays() async throws {
        let pki = try TestPKI.get()
        let methods = YediProtoCatalog.services.flatMap(\.methods)
        let server = try await RunningServer.start(
            pki: pki,
            services: YediProtoCatalog.services.map(AcceptAllService.init),
            interceptors: [
                AuthenticationInterceptor(
                    verifier: try pki.tokenVerifier(), servedApps: Set(TestAccessToken.servedApps.keys))
            ]
        )
        // Each kind of caller on its own connection, all kinds at once: one after another, the 2,000-odd
        // calls took 160 s, most of it spent reconnecting the connection that the failed-authentication
        // budget closed (the expired, tampered and unserved-app tokens) under everyone else's calls.
        struct Row: Sendable {
            var method: String
            var rule: String
            var caller: CallerKind
            var want: StatusCode
            var got: StatusCode
        }
        let port = server.port
        for method in methods where method.access == nil { XCTFail("\(method.fullName) carries no access rule") }
        let rows = try await withThrowingTaskGroup(of: [Row].self) { group in
            for caller in CallerKind.allCases {
                group.addTask {
                    var clients: [String: (RPCClient, Task<Void, Never>)] = [:]
                    var rows: [Row] = []
                    for method in methods {
                        guard let rule = method.access else { continue }
                        let (identity, token, app) = Self.credentials(caller, for: rule)
                        if clients[identity] == nil {
                            let client = try RPCClient(
                                configuration: pki.rpcClientConfiguration(ports: [port], identity: identity))
                            clients[identity] = (client, Task { await client.run() })
                        }
                        let got = await Self.call(method, client: clients[identity]!.0, token: token, app: app)
                        rows.append(
                            Row(
                                method: method.fullName, rule: "\(rule)", caller: caller,
                                want: Self.expected(rule, caller), got: got))
                    }
                    for (client, run) in clients.values {
                        client.beginGracefulShutdown()
                        await run.value
                    }
                    return rows
                }
            }
            return try await group.reduce(into: []) { $0 += $1 }
        }
        var seen: [StatusCode: Int] = [:]
        var slpReached: Set<String> = []
        for row in rows {
            XCTAssertEqual(row.got, row.want, "\(row.method) (\(row.rule)) called by \(row.caller.rawValue)")
            seen[row.got, default: 0] += 1
            if row.caller == .slpMember || row.caller == .slpAnonymous, row.got == .ok { slpReached.insert(row.method) }
        }

        // Every method of the protos is in the table, and the table exercises every outcome.
        XCTAssertEqual(methods.count, try Self.rpcDeclarationCount(), "catalog vs `rpc` lines in proto/")
        XCTAssertEqual(rows.count, methods.count * CallerKind.allCases.count)
        XCTAssertGreaterThan(methods.count, 40)
        for code in [StatusCode.ok, .unauthenticated, .permissionDenied] {
            XCTAssertGreaterThan(seen[code] ?? 0, 0, "no call answered \(code)")
        }
        // YeDi's services serve SLP only where a method or service says every app may call it (sign-out,
        // refresh; a user's devices and inbox, always in the caller's own app), or names SLP (its phone
        // sign-in).
        let yediServices = ["yedi.account.", "yedi.content.", "yedi.booking.", "yedi.chat."]
        XCTAssertEqual(
            Set(slpReached.filter { name in yediServices.contains { name.hasPrefix($0) } }),
            [
                "yedi.account.AccountService/RefreshSession", "yedi.account.AccountService/SignOut",
                "yedi.account.AccountService/DeleteAccount",
                // Identity: SLP signs in by phone (deploy/apps/slp.json).
                "yedi.account.Identity/StartPhoneVerification", "yedi.account.Identity/VerifyPhone",
                "yedi.account.Identity/CompleteIdentitySignUp", "yedi.account.Identity/CheckNickname",
                "yedi.account.Notifications/RegisterDevice", "yedi.account.Notifications/UnregisterDevice",
                "yedi.account.Notifications/ListNotifications", "yedi.account.Notifications/CountUnread",
                "yedi.account.Notifications/MarkRead",
                // Chat: SLP's match rooms (docs/slp.md); OpenRoom stays YeDi's.
                "yedi.chat.ChatService/SendMessage", "yedi.chat.ChatService/ListMessages",
                "yedi.chat.ChatService/MarkRead", "yedi.chat.ChatService/ListRooms",
                "yedi.chat.ChatService/Subscribe",
            ],
            "the YeDi methods an SLP caller reached")
        await server.stop()
    }

    /// The status of one call with an empty request (the accept-all handlers ignore it).
    static func call(
        _ method: MethodDescriptor, client: RPCClient, token: TestAccessToken?, app: String? = nil
    ) async -> StatusCode {
        await call(method, client: client, authorization: token?.authorization, app: app)
    }

    /// The status of one call with an empty request and `authorization` (a bearer token) when given.
    static func call(
        _ method: MethodDescriptor, client: RPCClient, authorization: String?, app: String?
    ) async -> StatusCode {
        var options = CallOptions.defaults
        if let authorization { options.metadata["authorization"] = authorization }
        if let app { options.metadata[AuthenticationInterceptor.appMetadataKey] = app }
        do {
            switch method.kind {
            case .unary:
                _ = try await client.unary(method, payload: [], options: options)
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

    /// `rpc` declarations in the proto files whose bindings go to YediProto (not rpc.proto, health.proto).
    static func rpcDeclarationCount() throws -> Int {
        let files = try FileManager.default.contentsOfDirectory(atPath: Protoc.protoDirectory.path)
            .filter { $0.hasSuffix(".proto") && !["rpc.proto", "health.proto", "access.proto"].contains($0) }
        var count = 0
        for file in files {
            let text = try String(contentsOf: Protoc.protoDirectory.appendingPathComponent(file), encoding: .utf8)
            count +=
                text.split(separator: "\n").filter { $0.trimmingCharacters(in: .whitespaces).hasPrefix("rpc ") }
                .count
        }
        return count
    }
}

/// Serves every method of a service descriptor: OK with an empty response, streams end at once.
struct AcceptAllService: RPCService {
    let serviceDescriptor: ServiceDescriptor

    init(_ descriptor: ServiceDescriptor) { serviceDescriptor = descriptor }

    func registerMethods(with router: inout RPCRouter) {
        for method in serviceDescriptor.methods {
            router.registerRaw(method) { _, _ in [] }
        }
    }
}
