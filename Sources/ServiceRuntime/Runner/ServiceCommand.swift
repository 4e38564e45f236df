import ArgumentParser
import Foundation
import Logging

/// The command line of a service executable: `ServiceOptions` (flags and `YEDI_…` variables), `--help`,
/// and a start failure reported as one clear line and a non-zero exit.
struct ServiceCommand<Definition: ServiceDefinition>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: Definition.executableName,
            abstract: Definition.summary,
            discussion: "Every option can also be given as the environment variable named in its help."
        )
    }

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        let configuration: ServiceConfiguration
        do {
            configuration = try ServiceConfiguration.resolve(
                options: options, environment: ProcessInfo.processInfo.environment, defaults: Definition.defaults)
        } catch {
            throw ValidationError(error.description)
        }
        ProcessLogging.bootstrap(level: configuration.logLevel)
        var logger = Logger(label: "yedi.\(configuration.name)")
        logger.logLevel = configuration.logLevel
        do {
            try await ServiceRunner.run(Definition.self, configuration: configuration, logger: logger)
        } catch {
            logger.critical("cannot run: \(error)")
            throw ExitCode.failure
        }
    }
}

extension ServiceDefinition {
    /// `AccountService` for `account`.
    static var executableName: String { defaults.name.prefix(1).uppercased() + defaults.name.dropFirst() + "Service" }
}

/// The process-wide logging backend, set once: swift-log allows one bootstrap per process, so only a
/// service's `main` calls this; services started in a test process log through the logger they are given.
enum ProcessLogging {
    static func bootstrap(level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }
}
