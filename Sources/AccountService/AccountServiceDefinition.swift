import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// AccountService: users, designers and their shops, sessions (it issues the access tokens), follows.
///
/// Its handlers come with the AccountService issue; until then its methods answer UNIMPLEMENTED.
enum AccountServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "account", port: 7001, metricsPort: 9101, peers: ["content", "booking", "chat"])
    static let summary = "Yedi AccountService: users, designers, sessions and follows, over TLS."
    static let issuesTokens = true
    static let placeholders = [YediAccount.AccountService.descriptor]

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] { [] }
}
