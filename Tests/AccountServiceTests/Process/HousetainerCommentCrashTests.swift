import Foundation
import GRDB
import RPCAccess
import RPCCore
import RPCTestSupport
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

/// The real ContentService executable, serving the repository's app files, is killed with SIGKILL in the
/// middle of a burst of comments on a bookmarked event: after a restart every comment it answered has
/// exactly its notifications (the owner's and each bookmarker's), and none is left without its comment.
final class HousetainerCommentCrashTests: XCTestCase {
    private static let answeredBeforeKill = 40

    func testHousetainerEveryCommentAnsweredBeforeSIGKILLHasExactlyItsNotificationsAfterARestart() async throws {
        let harness = try ServiceHarness()
        let nowhere = try ServiceHarness.unusedPort()
        let peers = ["account": nowhere, "booking": nowhere]
        let dataDirectory = harness.dataRoot.appendingPathComponent("housetainer-comment-crash").path
        func arguments() throws -> [String] {
            ["--apps", AccountFixture.repositoryApps, "--image-port", "\(try ServiceHarness.unusedPort())"]
        }
        func token(_ user: String, role: UserRole = "member") throws -> CallOptions {
            ServiceHarness.bearer(try harness.token(user: user, role: role, app: "housetainer"))
        }
        let first = try await ServiceProcess.start(
            "ContentService", harness: harness, dataDirectory: dataDirectory, peers: peers, arguments: try arguments())

        var answered: [String] = []
        try await withRPCClient(configuration: first.clientConfiguration()) { client in
            let community = YediHousetainer.Community.Client(client)
            let image = try await YediContent.ContentService.Client(client).uploadImage(
                .init(data: SampleImages.png(width: 4, height: 3, seed: 9)), options: try token("owner"))
            let event = try await community.createEvent(
                .init(
                    clientID: "crash-event",
                    fields: .init(
                        title: "집들이", scheduleType: .host, atMs: 4_000_000_000_000, detail: "저녁",
                        imageIDs: [image.id])),
                options: try token("owner"))
            _ = try await community.setEventDisplay(
                .init(eventID: event.id, displayed: true), options: try token("ht-admin", role: "admin"))
            for member in ["owner", "fan-1", "fan-2"] {
                _ = try await community.bookmark(.init(eventID: event.id), options: try token(member))
            }
            let writer = try token("writer")
            for index in 0..<200 {
                let request = YediHousetainer.AddCommentRequest(
                    clientID: "comment-\(index)", target: .init(target: .eventID(event.id)), content: "댓글 \(index)")
                guard answered.count == Self.answeredBeforeKill else {
                    answered.append(try await community.addComment(request, options: writer).id)
                    continue
                }
                // The next comment is in flight (or committing) when the process is killed.
                async let outcome = statusCode { _ = try await community.addComment(request, options: writer) }
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...30)))
                first.kill()
                _ = await outcome
                break
            }
        }
        XCTAssertEqual(answered.count, Self.answeredBeforeKill)

        let second = try await ServiceProcess.start(
            "ContentService", harness: harness, dataDirectory: dataDirectory, peers: peers, arguments: try arguments())
        defer { second.stop() }
        let database = try ProcessTesting.openReadOnly(dataDirectory + "/content.sqlite")
        let (comments, perComment, orphans) = try await database.read { db in
            (
                try String.fetchAll(db, sql: "SELECT id FROM housetainer_comment"),
                try Row.fetchAll(
                    db,
                    sql: """
                        SELECT c.id, count(n.id) AS notifications, sum(n.recipient_id = 'owner' AND n.type = 2) AS owner,
                            sum(n.type = 3) AS bookmarkers, sum(n.recipient_id = 'writer') AS writer
                        FROM housetainer_comment c LEFT JOIN housetainer_notification n ON n.comment_id = c.id
                        GROUP BY c.id
                        """
                ).map { row -> (String, Int, Int, Int, Int) in
                    (row["id"], row["notifications"], row["owner"], row["bookmarkers"], row["writer"])
                },
                try Int.fetchOne(
                    db,
                    sql: """
                        SELECT count(*) FROM housetainer_notification
                        WHERE comment_id IS NOT NULL AND comment_id NOT IN (SELECT id FROM housetainer_comment)
                        """) ?? -1
            )
        }
        XCTAssertTrue(Set(answered).isSubset(of: Set(comments)), "every answered comment is kept")
        for (id, notifications, owner, bookmarkers, writer) in perComment {
            XCTAssertEqual(
                [notifications, owner, bookmarkers, writer], [3, 1, 2, 0],
                "\(id): the owner once, each other bookmarker once, never the writer")
        }
        XCTAssertEqual(orphans, 0)
    }
}
