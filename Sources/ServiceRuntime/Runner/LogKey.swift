import Foundation
import RPCCore
import YediCrypto

/// The key of the user tags in logs (`user=h:3f9a…`, `LogUserTag`): HMAC-SHA256 of the user id, the first
/// 64 bits in hex. Enough to follow one user's lines; with the key, an operator can find a given user's
/// lines; without it, the logs name nobody, even once the account is deleted.
///
/// One key per deployment (`--log-key`, YEDI_LOG_KEY), shared by the services so that one user has one
/// tag everywhere. Without it, the service makes `<data>/log.key` (32 random bytes, mode 0600) on its first
/// start and keeps using it: tags are stable per service.
enum LogKey {
    static func userTag(_ key: [UInt8]) -> LogUserTag {
        LogUserTag { id in "h:" + SHA256.hex(Array(HMACSHA256.mac(key: key, Array(id.utf8)).prefix(8))) }
    }

    /// The deployment key: the user tags use it as is, page cursors a key derived from it
    /// (`PageCursorKey`).
    static func load(_ configuration: ServiceConfiguration) throws(StartupError) -> [UInt8] {
        if let file = configuration.logKeyFile {
            return try KeyFile.load(file, what: "log key", option: "--log-key or YEDI_LOG_KEY")
        }
        let file = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("log.key").path
        return try KeyFile.loadOrCreate(file, what: "log key")
    }
}
