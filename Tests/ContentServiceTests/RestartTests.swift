import Foundation
import GRDB
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import ContentService

/// What a restart finds: images and posts as acknowledged, and blob deletions a dying purge left listed.
final class RestartTests: XCTestCase {
    func testImagesSurviveARestartAndPendingBlobDeletionsFinishAtStart() async throws {
        let harness = try ServiceHarness()
        let data = harness.dataRoot.appendingPathComponent("content-restart").path
        let configuration = try harness.configuration(ContentServiceDefinition.defaults, dataDirectory: data)
        let token = try harness.token(user: "designer-1", role: .designer)
        let bytes = SampleImages.png(width: 12, height: 9, seed: 5)

        var service = try await harness.start(ContentServiceDefinition.self, configuration: configuration)
        let ref = try await withClient(harness, service) { api in
            try await api.uploadImage(.init(data: bytes), options: ServiceHarness.bearer(token))
        }
        // A purge that committed and died before deleting its files: the row says so, the file is there.
        let orphan = String(repeating: "c", count: 64)
        let folder = URL(fileURLWithPath: data).appendingPathComponent("images")
        XCTAssertTrue(
            FileManager.default.createFile(atPath: folder.appendingPathComponent(orphan).path, contents: Data([1])))
        try await service.environment.database.write { db in
            try db.execute(sql: "INSERT INTO image_blob_garbage (sha256) VALUES (?)", arguments: [orphan])
        }
        try await service.stop()

        service = try await harness.start(ContentServiceDefinition.self, configuration: configuration)
        let image = try await withClient(harness, service) { api in try await api.getImage(.init(imageID: ref.id)) }
        XCTAssertEqual(image.data, bytes)
        XCTAssertEqual(image.image?.id, ref.id)
        XCTAssertEqual([image.image?.width, image.image?.height], [ref.width, ref.height])
        // The image port picked another port this time; the variant (the URL's path) is the same.
        func variantPath(_ url: String?) -> String? { url?.split(separator: "/images/").last.map(String.init) }
        XCTAssertEqual(variantPath(image.image?.url), variantPath(ref.url))
        XCTAssertNotNil(variantPath(ref.url))
        XCTAssertFalse(
            FileManager.default.fileExists(atPath: folder.appendingPathComponent(orphan).path),
            "the start finished the interrupted deletion")
        let pending = try await service.environment.database.read { db in
            try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM image_blob_garbage")
        }
        XCTAssertEqual(pending, 0)
        try await service.stop()
    }

    private func withClient<T: Sendable>(
        _ harness: ServiceHarness, _ service: RunningService,
        _ body: (YediContent.ContentService.Client) async throws -> T
    ) async throws -> T {
        try await withRPCClient(configuration: harness.clientConfiguration(port: try await service.port)) { client in
            try await body(YediContent.ContentService.Client(client))
        }
    }
}
