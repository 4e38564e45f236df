import Foundation
import XCTest

@testable import ContentService

/// The file blob store: content-addressed names only, whole files or none, leftovers swept at start.
final class BlobStoreTests: XCTestCase {
    private func folder() -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("content-blobs-\(UUID())")
        addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    func testWritesOnceReadsBackAndDeletes() async throws {
        let store = try FileImageBlobStore(folder: folder())
        let sha = try await ImageBlobStoreContract.writesOnceAndReadsBack(store)
        try store.delete(sha256: sha)
        try store.delete(sha256: sha)  // deleting what is gone is fine
        let left = try await store.read(sha256: sha)
        XCTAssertNil(left)
        let exists = try await store.exists(sha256: sha)
        XCTAssertFalse(exists)
    }

    func testOnlySHA256NamesAreAccepted() async throws {
        try await ImageBlobStoreContract.onlySHA256NamesAreAccepted(try FileImageBlobStore(folder: folder()))
    }

    func testTemporaryFilesLeftByACrashAreSweptAtStart() async throws {
        let url = folder()
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let leftover = url.appendingPathComponent(".tmp-crashed")
        XCTAssertTrue(FileManager.default.createFile(atPath: leftover.path, contents: Data([1, 2])))
        let store = try FileImageBlobStore(folder: url)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover.path))
        let names = try await store.names()
        XCTAssertEqual(names, [])
    }
}

/// What every blob store does, whichever engine keeps the bytes.
enum ImageBlobStoreContract {
    /// Writes a blob twice (the second writes nothing), reads it back; answers its name.
    static func writesOnceAndReadsBack(_ store: any ImageBlobStore) async throws -> String {
        let sha = String(repeating: "ab", count: 32)
        let bytes: [UInt8] = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let missing = try await store.read(sha256: sha)
        XCTAssertNil(missing)
        let first = try await store.write(bytes, sha256: sha)
        XCTAssertTrue(first)
        let second = try await store.write([9], sha256: sha)
        XCTAssertFalse(second, "the same name is written once")
        let read = try await store.read(sha256: sha)
        XCTAssertEqual(read, bytes)
        let exists = try await store.exists(sha256: sha)
        XCTAssertTrue(exists)
        let names = try await store.names()
        XCTAssertEqual(names, [sha])
        return sha
    }

    static func onlySHA256NamesAreAccepted(_ store: any ImageBlobStore) async throws {
        for name in ["../escape", "", String(repeating: "A", count: 64), String(repeating: "a", count: 63)] {
            do {
                _ = try await store.write([1], sha256: name)
                XCTFail("wrote \(name)")
            } catch is BlobStoreError {}
            do {
                _ = try await store.read(sha256: name)
                XCTFail("read \(name)")
            } catch is BlobStoreError {}
            let exists = try await store.exists(sha256: name)
            XCTAssertFalse(exists, name)
        }
        let names = try await store.names()
        XCTAssertEqual(names, [])
    }
}
