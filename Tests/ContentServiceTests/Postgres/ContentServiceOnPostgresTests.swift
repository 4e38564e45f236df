import Foundation
import NIOHTTP1
import PostgresNIO
import PostgresTestSupport
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediCrypto
import YediProto

@testable import ContentService

/// ContentService started by the runner on PostgreSQL (docs/postgres.md): it migrates an empty database
/// itself, keeps image bytes in it, and a second replica on the same database serves what the first
/// stored, at its RPC port and its image port, and stops serving it once the first has deleted it
/// (its caches ask before answering a hit).
final class ContentServiceOnPostgresTests: XCTestCase {
    private var database: TestDatabase!
    private var fixture: ContentFixture?
    private var second: RunningService?
    private var http: ImageHTTPClient?

    override func setUp() async throws {
        database = try await TestDatabase()
    }

    override func tearDown() async throws {
        try? await http?.shutdown()
        try? await second?.stop()
        try? await fixture?.stop()
        try await database?.close()
    }

    /// The first replica (with AccountService on SQLite, as the fixture starts it), given the deployment's
    /// shared key files.
    private func start() async throws -> ContentFixture {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("content-keys-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        addTeardownBlock { try? FileManager.default.removeItem(at: folder) }
        let logKey = folder.appendingPathComponent("log.key")
        let imageKey = folder.appendingPathComponent("image-url.key")
        for key in [logKey, imageKey] { try Data((0..<32).map { _ in UInt8.random(in: 0...255) }).write(to: key) }
        let fixture = try await ContentFixture.start(
            database: .postgres(database.settings), shared: (logKey.path, imageKey.path))
        self.fixture = fixture
        http = ImageHTTPClient(trusting: fixture.harness.pki.caFile)
        return fixture
    }

    /// A second replica: the first one's configuration on a data folder and ports of its own.
    private func secondReplica(_ fixture: ContentFixture) async throws -> (RunningService, TestHooks) {
        var configuration = fixture.content.environment.configuration
        configuration.port = try ServiceHarness.unusedPort()
        configuration.metricsPort = 0
        configuration.dataDirectory = fixture.harness.dataRoot.appendingPathComponent("content-2").path
        configuration.images?.port = 0
        let hooks = TestHooks()
        TestContentDefinition.register(hooks, for: configuration.dataDirectory)
        let second = try await fixture.harness.start(
            TestContentDefinition.self, configuration: configuration, clock: fixture.clock)
        self.second = second
        return (second, hooks)
    }

    private func withClient<T: Sendable>(
        _ service: RunningService, _ body: (YediContent.ContentService.Client) async throws -> T
    ) async throws -> T {
        var configuration = fixture!.harness.clientConfiguration(port: try await service.port)
        configuration.limits = WireLimits(maxFrameBytes: 11 << 20)
        return try await withRPCClient(configuration: configuration) { client in
            try await body(YediContent.ContentService.Client(client))
        }
    }

    func testTheRunnerMigratesAnEmptyDatabaseAndKeepsNoBytesInTheDataFolder() async throws {
        let fixture = try await start()
        let customer = try await fixture.customer()
        let bytes = SampleImages.png(width: 5, height: 4, seed: 3)
        let ref = try await fixture.upload(customer, bytes)

        let versions = try await database.postgres.read { connection in
            try await connection.query(
                "SELECT name FROM runtime_schema_migrations ORDER BY position", logger: TestPostgres.logger
            )
            .collect().map { try $0.decode(String.self) }
        }
        XCTAssertEqual(versions, ContentServiceDefinition.postgresMigrations?.map(\.name))
        let stored = try await database.postgres.read { connection in
            try await connection.query(
                "SELECT sha256 FROM image_blob WHERE sha256 = \(SHA256.hex(SHA256.hash(bytes)))",
                logger: TestPostgres.logger
            ).collect().count
        }
        XCTAssertEqual(stored, 1, "the original's bytes are a row")
        let data = fixture.content.environment.dataDirectory
        for leftover in ["content.sqlite", "images", "image-variants"] {
            XCTAssertFalse(
                FileManager.default.fileExists(atPath: data.appendingPathComponent(leftover).path),
                "\(leftover) is not made on PostgreSQL")
        }
        let back = try await fixture.api.getImage(.init(imageID: ref.id))
        XCTAssertEqual(Array(back.data), bytes)
    }

    func testAnotherReplicaServesWhatOneStoredUntilItIsDeletedThere() async throws {
        let fixture = try await start()
        let designer = try await fixture.designer()
        let post = try await fixture.post(designer)
        let photo = try XCTUnwrap(post.photos.first)
        let (second, secondHooks) = try await secondReplica(fixture)
        let http = try XCTUnwrap(http)

        // Read through both replicas, twice: each has it in its caches afterwards.
        let original = try await fixture.api.getImage(.init(imageID: photo.id))
        for _ in 0..<2 {
            let fromSecond = try await withClient(second) { try await $0.getImage(.init(imageID: photo.id)) }
            XCTAssertEqual(fromSecond.data, original.data, "the second replica reads the first one's upload")
        }
        let reads = try XCTUnwrap(secondHooks.blobs.value).reads.value
        XCTAssertEqual(reads, 1, "the second read was a cache hit: no blob read")

        // The image port of the second replica serves the variant, and a signed URL made by the first.
        _ = try await eventually(timeout: 10) { !(secondHooks.urls.value?.baseURL ?? "").isEmpty }
        let secondBase = try XCTUnwrap(secondHooks.urls.value?.baseURL)
        let firstBase = try await fixture.imageBase()
        let onSecond = photo.url.replacingOccurrences(of: firstBase, with: secondBase)
        let served = try await http.fetch(onSecond)
        XCTAssertEqual(served.status, .ok)
        let upload = try await fixture.upload(designer)
        XCTAssertTrue(upload.url.contains("?"), "an upload no post shows has a signed URL: \(upload.url)")
        let signed = try await http.fetch(upload.url.replacingOccurrences(of: firstBase, with: secondBase))
        XCTAssertEqual(signed.status, .ok, "the replicas share the image URL key")

        // Deleted through the first replica (account deletion): the second no longer serves it, cached or not.
        _ = try await fixture.asService("account") { try await $0.purgeUser(.init(userID: designer.id)) }
        let gone = await statusCode {
            _ = try await self.withClient(second) { try await $0.getImage(.init(imageID: photo.id)) }
        }
        XCTAssertEqual(gone, .notFound, "the second replica's cached copy is not served")
        let afterPurge = try await http.fetch(onSecond)
        XCTAssertEqual(afterPurge.status, .notFound, "nor is its cached variant")
    }
}
