import Foundation
import ServiceRuntime
import ServiceTestSupport
import XCTest

@testable import ContentService

/// A service started outside systemd keeps its data private by itself: the data folder (and folders
/// below it) 0700, the database, its WAL and shared-memory files and the log key 0600, also when the
/// folder and the database already existed with wider modes.
final class DataFileModeTests: XCTestCase {
    private func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try XCTUnwrap(attributes[.posixPermissions] as? Int, path) & 0o777
    }

    private func assertPrivate(_ data: URL) throws {
        XCTAssertEqual(try mode(data.path), 0o700, "data folder")
        XCTAssertEqual(try mode(data.appendingPathComponent("images").path), 0o700, "images folder")
        for file in ["content.sqlite", "content.sqlite-wal", "content.sqlite-shm", "log.key"] {
            XCTAssertEqual(try mode(data.appendingPathComponent(file).path), 0o600, file)
        }
    }

    /// Starts ContentService on `data`, checks the modes while it runs (the WAL files exist then), stops it.
    private func startAndCheck(_ harness: ServiceHarness, _ data: URL) async throws {
        let service = try await harness.start(
            ContentServiceDefinition.self,
            configuration: try harness.configuration(ContentServiceDefinition.defaults, dataDirectory: data.path))
        do {
            try assertPrivate(data)
        } catch {
            try await service.stop()
            throw error
        }
        try await service.stop()
    }

    func testAFreshStartMakesTheFolder0700AndTheFiles0600() async throws {
        let harness = try ServiceHarness()
        let data = harness.dataRoot.appendingPathComponent("fresh/content")
        try await startAndCheck(harness, data)
    }

    func testWiderModesLeftByHandOrAnOlderVersionAreTightenedAtStart() async throws {
        let harness = try ServiceHarness()
        let data = harness.dataRoot.appendingPathComponent("loose")
        try await startAndCheck(harness, data)
        let files = FileManager.default
        try files.setAttributes([.posixPermissions: 0o755], ofItemAtPath: data.path)
        try files.setAttributes([.posixPermissions: 0o777], ofItemAtPath: data.appendingPathComponent("images").path)
        for file in ["content.sqlite", "content.sqlite-wal", "content.sqlite-shm", "log.key"] {
            let path = data.appendingPathComponent(file).path
            if !files.fileExists(atPath: path) { XCTAssertTrue(files.createFile(atPath: path, contents: nil)) }
            try files.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        }
        try await startAndCheck(harness, data)
    }
}
