import ArgumentParser
import RPCCore
import ServiceRuntime
import YediProto

/// The ChatService process.
///
/// Its RPCs are published (proto/chat.proto) and answer UNIMPLEMENTED until their handlers land.
@main
struct ChatServiceMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ChatService",
        abstract: "Yedi ChatService: serves yedi.chat.ChatService over TLS."
    )

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner(name: "chat", options: options).run(
            services: [],
            placeholders: [YediChat.ChatService.descriptor],
            verifier: nil
        )
    }
}
