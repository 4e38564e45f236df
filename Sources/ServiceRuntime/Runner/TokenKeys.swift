import AccessTokens
import Foundation

/// Loads the token keys a service is configured with, turning a missing or bad file into a start
/// failure that names the option.
enum TokenKeys {
    static func verifier(configuration: ServiceConfiguration, apps: AppCatalog, clock: any WallClock) throws
        -> JWTVerifier
    {
        var keys: [TokenVerificationKey] = []
        for file in configuration.tokenPublicKeyFiles {
            do {
                keys.append(try TokenVerificationKey.load(pemFile: file))
            } catch {
                throw ConfigurationError(
                    option: "--token-public-keys (YEDI_TOKEN_PUBLIC_KEYS)", problem: "cannot load \(file): \(error)")
            }
        }
        return JWTVerifier(keys: keys, apps: apps.roles, now: { clock.now })
    }

    static func signingKey(configuration: ServiceConfiguration) throws -> TokenSigningKey {
        do {
            return try TokenSigningKey.load(pemFile: configuration.tokenSigningKeyFile)
        } catch {
            throw ConfigurationError(
                option: "--token-signing-key (YEDI_TOKEN_SIGNING_KEY)",
                problem: "cannot load \(configuration.tokenSigningKeyFile): \(error)")
        }
    }
}
