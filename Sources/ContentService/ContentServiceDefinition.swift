import GRDB
import RPCCore
import ServiceRuntime
import YediProto

/// ContentService: posts, images, likes, reviews and comments.
///
/// Only PurgeUser (account deletion) is served so far; the rest comes with the ContentService issue and
/// answers UNIMPLEMENTED until then.
enum ContentServiceDefinition: ServiceDefinition {
    static let defaults = ServiceDefaults(
        name: "content", port: 7002, metricsPort: 9102,
        // Images of up to 10 MiB, plus the envelope and the rest of the request.
        maxFrameBytes: 11 << 20, peers: ["account", "booking"])
    static let summary = "Yedi ContentService: posts, images, likes, reviews and comments, over TLS."
    static let placeholders = [YediContent.ContentService.descriptor]

    static func migrate(_ migrator: inout DatabaseMigrator) {}

    static func makeServices(_ env: ServiceEnvironment) async throws -> [any RPCService] {
        [
            PurgeUserReceiver.methods(
                of: YediContent.ContentService.descriptor, method: YediContent.ContentService.Method.purgeUser,
                environment: env)
        ]
    }
}
