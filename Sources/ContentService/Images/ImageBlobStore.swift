import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where image bytes live, named by the SHA-256 of their content (lowercase hex): files beside SQLite
/// (`FileImageBlobStore`), rows of the shared database on PostgreSQL (`PostgresImageBlobStore`, so every
/// replica reads what another wrote). Behind a protocol so tests can count reads (a cache hit must not
/// read a blob).
protocol ImageBlobStore: Sendable {
    /// Stores `bytes` under `sha256` unless already there; returns whether it wrote anything.
    @discardableResult
    func write(_ bytes: [UInt8], sha256: String) async throws -> Bool
    /// The bytes, or nil when no blob has this name.
    func read(sha256: String) async throws -> [UInt8]?
    func exists(sha256: String) async throws -> Bool
    /// Deletes a blob no image names any more. Synchronous: the content store calls it inside the
    /// transaction that found the blob unreferenced, so no upload can name it in between.
    func delete(sha256: String) throws
    /// Every stored name (for checks and tests).
    func names() async throws -> [String]
}

/// Blobs as files in one folder (`<data>/images/<sha256>`).
///
/// A write goes to a temporary file in the same folder, is fsynced, renamed over the final name and the
/// folder fsynced: a crash leaves either no file or the whole file under its name, never a half image
/// (a leftover temporary file is swept at start). Content addressing makes a re-upload of the same bytes
/// write nothing.
struct FileImageBlobStore: ImageBlobStore {
    let folder: URL

    init(folder: URL) throws {
        self.folder = folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) where name.hasPrefix(".tmp-") {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
        }
    }

    private func path(_ sha256: String) throws -> String {
        folder.appendingPathComponent(try ImageBlobName.checked(sha256)).path
    }

    func write(_ bytes: [UInt8], sha256: String) async throws -> Bool {
        try await Self.offload { try writeNow(bytes, sha256: sha256) }
    }

    func read(sha256: String) async throws -> [UInt8]? {
        try await Self.offload { try readNow(sha256: sha256) }
    }

    func exists(sha256: String) async throws -> Bool {
        guard let name = try? path(sha256) else { return false }
        return access(name, F_OK) == 0
    }

    func names() async throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.sorted()
    }

    /// File work (10 MiB writes, fsync) off the cooperative pool.
    private static func offload<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await NIOThreadPool.singleton.runIfActive(work)
    }

    private func writeNow(_ bytes: [UInt8], sha256: String) throws -> Bool {
        let final = try path(sha256)
        if access(final, F_OK) == 0 { return false }
        let temporary = folder.appendingPathComponent(".tmp-\(UUID().uuidString)").path
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw BlobStoreError("cannot create \(temporary): errno \(errno)") }
        var closed = false
        defer {
            if !closed { close(fd) }
        }
        do {
            try bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        throw BlobStoreError("write failed: errno \(errno)")
                    }
                    offset += written
                }
            }
            guard fsync(fd) == 0 else { throw BlobStoreError("fsync failed: errno \(errno)") }
            closed = true
            guard close(fd) == 0 else { throw BlobStoreError("close failed: errno \(errno)") }
            guard rename(temporary, final) == 0 else { throw BlobStoreError("rename failed: errno \(errno)") }
        } catch {
            unlink(temporary)
            throw error
        }
        try syncFolder()
        return true
    }

    private func readNow(sha256: String) throws -> [UInt8]? {
        let name = try path(sha256)
        guard let data = FileManager.default.contents(atPath: name) else { return nil }
        return [UInt8](data)
    }

    func delete(sha256: String) throws {
        let name = try path(sha256)
        if unlink(name) != 0, errno != ENOENT { throw BlobStoreError("unlink failed: errno \(errno)") }
        try syncFolder()
    }

    /// Makes the rename (or unlink) itself durable.
    private func syncFolder() throws {
        let fd = open(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw BlobStoreError("cannot open the image folder: errno \(errno)") }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw BlobStoreError("fsync of the image folder failed: errno \(errno)") }
    }
}

/// The only names a blob may have: 64 lowercase hex digits (a SHA-256), so no name is a path.
enum ImageBlobName {
    static func checked(_ sha256: String) throws -> String {
        guard sha256.utf8.count == 64, sha256.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { throw BlobStoreError("not a SHA-256 name: \(sha256)") }
        return sha256
    }
}

struct BlobStoreError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
