import ArgumentParser
import RPCCore
import ServiceRuntime
import YediProto

/// The ContentService process.
///
/// Its RPCs are published (proto/content.proto) and answer UNIMPLEMENTED until their handlers land.
@main
struct ContentServiceMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ContentService",
        abstract: "Yedi ContentService: serves yedi.content.ContentService over TLS."
    )

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner(name: "content", options: options).run(
            services: [],
            placeholders: [YediContent.ContentService.descriptor],
            verifier: nil
        )
    }
}
