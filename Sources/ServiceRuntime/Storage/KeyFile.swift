import Foundation
import YediCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// A secret key in a file: the log key (`LogKey`), ContentService's image URL key. Either the operator
/// names a file (shared by replicas), or the service makes one in its data folder on its first start
/// (32 random bytes, mode 0600) and keeps using it.
public enum KeyFile {
    public static let minimumBytes = 16

    /// The key in `file`, which the operator named with `option`; refused when shorter than 16 bytes.
    public static func load(_ file: String, what: String, option: String) throws(StartupError) -> [UInt8] {
        guard let key = FileManager.default.contents(atPath: file), key.count >= minimumBytes else {
            throw StartupError(
                "\(what) \(file) cannot be used: it must be a readable file of at least \(minimumBytes) bytes "
                    + "(set with \(option); make one with `openssl rand 32 > FILE`)")
        }
        return Array(key)
    }

    /// The key in `file`, made first if missing (or too short to use).
    public static func loadOrCreate(_ file: String, what: String) throws(StartupError) -> [UInt8] {
        if let key = FileManager.default.contents(atPath: file), key.count >= minimumBytes {
            chmod(file, 0o600)
            return Array(key)
        }
        let key = SecureRandom.bytes(32)
        let descriptor = open(file, O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            throw StartupError("cannot create the \(what) \(file): \(String(cString: strerror(errno)))")
        }
        defer { close(descriptor) }
        // An existing file (too short to use) keeps its mode through O_CREAT: set it.
        guard fchmod(descriptor, 0o600) == 0 else {
            throw StartupError("cannot make the \(what) \(file) private: \(String(cString: strerror(errno)))")
        }
        let written = key.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == key.count, fsync(descriptor) == 0 else {
            throw StartupError("cannot write the \(what) \(file): \(String(cString: strerror(errno)))")
        }
        return key
    }
}
