import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A service's data is its users' data: the data folder is 0700 and the database files 0600, whoever
/// starts the service (systemd's `StateDirectoryMode` and `UMask` cover only the units). Modes are
/// checked and tightened at every start, so a folder made by hand or by an older version is fixed too.
enum PrivateFiles {
    static let folderMode: mode_t = 0o700
    static let fileMode: mode_t = 0o600

    /// Sets `path` (an existing folder or file) to `mode` unless it already has no wider bits.
    static func tighten(_ path: String, to mode: mode_t) throws(StartupError) {
        var status = stat()
        guard stat(path, &status) == 0 else {
            if errno == ENOENT { return }
            throw StartupError("cannot read the mode of \(path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & 0o777 & ~mode != 0 else { return }
        guard chmod(path, status.st_mode & 0o777 & mode) == 0 else {
            throw StartupError(
                "\(path) is readable by others (mode \(String(status.st_mode & 0o777, radix: 8))) and cannot be "
                    + "made \(String(mode, radix: 8)): \(String(cString: strerror(errno)))")
        }
    }

    /// The database file and its WAL and shared-memory files (SQLite gives new ones the database's mode).
    static func databaseFiles(_ databasePath: String) -> [String] {
        [databasePath, databasePath + "-wal", databasePath + "-shm"]
    }

    /// Creates the database file 0600 if it is missing, so SQLite never makes it 0644.
    static func createDatabaseFile(_ databasePath: String) throws(StartupError) {
        let descriptor = open(databasePath, O_CREAT | O_WRONLY | O_CLOEXEC, fileMode)
        guard descriptor >= 0 else {
            throw StartupError("cannot create \(databasePath): \(String(cString: strerror(errno)))")
        }
        close(descriptor)
    }
}
