import Foundation
import ServiceRuntime

/// The provider configuration chooses (`--payment-api-url`): Toss when configured, else the development
/// provider in `<data>/dev-payments` (or the folder `--dev-payments-folder` names, shared by replicas), said
/// in the log outside development mode.
public enum PaymentProviderSetup {
    public static func provider(for env: ServiceEnvironment) throws -> any PaymentProvider {
        if let toss = env.configuration.payments.toss {
            return TossPaymentsProvider(url: toss.url, secretKey: toss.secretKey, clientKey: toss.clientKey)
        }
        if !env.configuration.development {
            env.logger.warning("payments: no provider is configured; the development provider approves dev_ok_ keys")
        }
        guard let shared = env.configuration.payments.developmentFolder else {
            return DevelopmentPaymentProvider(folder: try env.dataFolder("dev-payments"))
        }
        let folder = URL(fileURLWithPath: shared, isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return DevelopmentPaymentProvider(folder: folder)
    }
}
