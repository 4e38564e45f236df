import Foundation
import RPCCore
import YediCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// The key of the user tags in logs (`user=h:3f9a…`, `LogUserTag`): HMAC-SHA256 of the user id, the first
/// 64 bits in hex. Enough to follow one user's lines; with the key, an operator can find a given user's
/// lines; without it, the logs name nobody, even once the account is deleted.
///
/// One key per deployment (`--log-key`, YEDI_LOG_KEY), shared by the services so that one user has one
/// tag everywhere. Without it, the service makes `<data>/log.key` (32 random bytes, mode 0600) on its first
/// start and keeps using it: tags are stable per service.
enum LogKey {
    static let minimumBytes = 16

    static func userTag(_ key: [UInt8]) -> LogUserTag {
        LogUserTag { id in "h:" + SHA256.hex(Array(HMACSHA256.mac(key: key, Array(id.utf8)).prefix(8))) }
    }

    /// The deployment key: the user tags use it as is, page cursors a key derived from it
    /// (`PageCursorKey`).
    static func load(_ configuration: ServiceConfiguration) throws(StartupError) -> [UInt8] {
        if let file = configuration.logKeyFile {
            guard let key = FileManager.default.contents(atPath: file), key.count >= minimumBytes else {
                throw StartupError(
                    "log key \(file) cannot be used: it must be a readable file of at least \(minimumBytes) bytes "
                        + "(set with --log-key or YEDI_LOG_KEY; make one with `openssl rand 32 > FILE`)")
            }
            return Array(key)
        }
        let file = URL(fileURLWithPath: configuration.dataDirectory).appendingPathComponent("log.key").path
        if let key = FileManager.default.contents(atPath: file), key.count >= minimumBytes {
            chmod(file, 0o600)
            return Array(key)
        }
        let key = SecureRandom.bytes(32)
        let descriptor = open(file, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StartupError("cannot create the log key \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // An existing file (too short to use) keeps its mode through O_CREAT: set it.
        guard fchmod(descriptor, 0o600) == 0 else {
            throw StartupError("cannot make the log key \(file) private: \(String(cString: strerror(errno)))")
        }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == key.count, fsync(descriptor) == 0 else {
            throw StartupError("cannot write the log key \(file): \(String(cString: strerror(errno)))")
        }
        return key
    }
}
