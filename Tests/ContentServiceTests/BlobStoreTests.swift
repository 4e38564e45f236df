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

    func testWritesOnceReadsBackAndDeletes() throws {
        let store = try FileImageBlobStore(folder: folder())
        let sha = String(repeating: "ab", count: 32)
        XCTAssertTrue(try store.write([1, 2, 3], sha256: sha))
        XCTAssertFalse(try store.write([1, 2, 3], sha256: sha), "the same name is written once")
        XCTAssertEqual(try store.read(sha256: sha), [1, 2, 3])
        XCTAssertEqual(try store.names(), [sha])
        try store.delete(sha256: sha)
        try store.delete(sha256: sha)  // deleting what is gone is fine
        XCTAssertNil(try store.read(sha256: sha))
        XCTAssertFalse(store.exists(sha256: sha))
    }

    func testOnlySHA256NamesAreAccepted() throws {
        let store = try FileImageBlobStore(folder: folder())
        for name in ["../escape", "", String(repeating: "A", count: 64), String(repeating: "a", count: 63)] {
            XCTAssertThrowsError(try store.write([1], sha256: name), name)
            XCTAssertThrowsError(try store.read(sha256: name), name)
        }
    }

    func testTemporaryFilesLeftByACrashAreSweptAtStart() throws {
        let url = folder()
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let leftover = url.appendingPathComponent(".tmp-crashed")
        XCTAssertTrue(FileManager.default.createFile(atPath: leftover.path, contents: Data([1, 2])))
        let store = try FileImageBlobStore(folder: url)
        XCTAssertFalse(FileManager.default.fileExists(atPath: leftover.path))
        XCTAssertEqual(try store.names(), [])
    }
}
