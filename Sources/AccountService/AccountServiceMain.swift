import ArgumentParser
import RPCCore
import ServiceRuntime
import YediProto

/// The AccountService process.
///
/// Its RPCs are published (proto/account.proto) and answer UNIMPLEMENTED until their handlers land.
@main
struct AccountServiceMain: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "AccountService",
        abstract: "Yedi AccountService: serves yedi.account.AccountService over TLS."
    )

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        try await ServiceRunner(name: "account", options: options).run(
            services: [],
            placeholders: [YediAccount.AccountService.descriptor],
            verifier: nil
        )
    }
}
