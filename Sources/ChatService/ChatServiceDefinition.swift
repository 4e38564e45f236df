import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// ChatService: customer–designer rooms, messages and live streams.
///
/// Only PurgeUser (account deletion) is served so far; the rest comes with the ChatService issue and
/// answers UNIMPLEMENTED until then.
enum ChatServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "chat", port: 7004, metricsPort: 9104, peers: ["account", "content", "booking"])
    static let summary = "Yedi ChatService: customer–designer rooms, messages and live streams, over TLS."
    static let placeholders = [YediChat.ChatService.descriptor]

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            PurgeUserReceiver.methods(
                of: YediChat.ChatService.descriptor, method: YediChat.ChatService.Method.purgeUser, environment: env)
        ]
    }
}
