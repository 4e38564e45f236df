import AccessTokens
import BenchSupport
import Foundation
import PostgresNIO
import RPCAccess
import RPCCore
import Synchronization
import YediProto

/// `--failover`: a ContentService replica's death under likes, as issue 31 asks it measured (the chat,
/// booking and account benches do the same for their services; all run on `FailoverRun`).
///
/// `--replicas` ContentService processes share a fresh PostgreSQL database. Four designers post ten posts
/// each through replica 0. Then each of `failover-customers` workers likes those posts one after another
/// through a client spread over every replica (the client's own balancing, ejection and health watch),
/// as a new customer every 40 likes. Like is idempotent, so the client retries it after UNAVAILABLE
/// itself, and a worker whose call still failed likes the same post again. Replica 0 gets SIGKILL after a
/// phase and is restarted after another. Then the database is read.
///
/// The `failover` line: the workers' figures (`FailoverWorkers`), likes acknowledged, those missing from
/// the database (lost), those stored but never acknowledged (the run stopped before the retry was
/// answered), and posts whose `like_count` differs from their rows (should be 0); the restart's time to
/// SERVING and the CPU split. AccountService and BookingService are not started: a like needs neither.
extension ContentBench {
    static let failoverDesigners = 4
    static let failoverPostsPerDesigner = 10

    func measureFailover(in work: URL, database: BenchPostgres) async throws {
        let pki = try pkiOptions.folder(in: work)
        let executable = try ServiceProcess.besideThisExecutable("ContentService")
        let nowhere = try ServiceProcess.freePort()
        let arguments =
            ["--peer", "account=127.0.0.1:\(nowhere)", "--peer", "booking=127.0.0.1:\(nowhere)"]
            + database.replicaArguments(sharingKeysIn: work)
            + ["--image-url-key", BenchPostgres.keyFile(named: "image-url.key", in: work)]
        // Each replica serves image URLs on a port of its own, kept by its restart.
        let imagePorts = try (0..<replicas).map { _ in try ServiceProcess.freePort() }
        let start: @Sendable (Int, Int?, String) async throws -> ServiceProcess = { replica, port, run in
            try await ServiceProcess.start(
                executable, name: "ContentService", port: port, pki: pki,
                data: work.appendingPathComponent("data-\(replica)").path,
                log: work.appendingPathComponent("service-\(replica)\(run).log").path,
                arguments: arguments + ["--image-port", "\(imagePorts[replica])"])
        }
        let processes = ProcessList()
        defer { processes.stopAll() }
        for replica in 0..<replicas { processes.append(try await start(replica, nil, "")) }

        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: pki + "/token-signing.key"),
            lifetime: .seconds(3_600), now: { Date() })
        let posts = try await seedFailoverPosts(processes[0], issuer: issuer)

        let customers = failoverCustomers
        let client = try RPCClient(configuration: ServiceProcess.clientConfiguration(spreadingOver: processes.all))
        let clientTask = Task { await client.run() }
        defer { client.beginGracefulShutdown() }
        let content = YediContent.ContentService.Client(client)
        let workers = FailoverWorkers(count: customers)
        let ledger = LikeLedger()

        let restart = { (port: Int) in try await start(0, port, "-restarted") }
        let run = try await FailoverRun.measure(
            processes: processes, restart: restart, phase: failoverOptions.phase, workers: workers
        ) {
            await withTaskGroup(of: Void.self) { group in
                for worker in 0..<customers {
                    group.addTask {
                        var generation = 0
                        while !workers.isStopped {
                            let member = "bench-fail-\(worker)-\(generation)"
                            guard let options = try? Self.caller(member, role: .customer, issuer: issuer) else {
                                return
                            }
                            for post in posts {
                                while !workers.isStopped {
                                    do {
                                        _ = try await content.like(.init(postID: post), options: options)
                                        workers.succeeded(worker)
                                        ledger.acknowledged(post: post, member: member)
                                        break
                                    } catch {
                                        workers.failed(worker, error)
                                        try? await Task.sleep(for: .milliseconds(20))
                                    }
                                }
                            }
                            generation += 1
                        }
                    }
                }
            }
        }
        client.beginGracefulShutdown()
        await clientTask.value

        let (stored, countsOff) = try await storedLikes(database)
        let acknowledged = ledger.acknowledgedLikes
        print(
            #"{"bench":"failover",\#(engineField)"replicas":\#(replicas),"service":"ContentService","#
                + #""killed":"replica 0","phase_s":\#(failoverOptions.failoverPhaseSeconds),"#
                + #""customers":\#(customers),"posts":\#(posts.count),"#
                + workers.fields(noun: "customers")
                + #""acknowledged":\#(acknowledged.count),"acknowledged_lost":\#(acknowledged.subtracting(stored).count),"#
                + #""stored_unacknowledged":\#(stored.subtracting(acknowledged).count),"#
                + #""posts_with_like_count_off":\#(countsOff),"#
                + run.fields + #""likes_per_second":\#(run.rate(acknowledged.count)),"tls":true}"#)
    }

    /// Call options of a bench member: a token from the bench's issuer, a generous deadline.
    static func caller(_ userID: String, role: UserRole, issuer: AccessTokenIssuer) throws
        -> CallOptions
    {
        CallOptions(
            timeout: .seconds(30),
            metadata: [
                "authorization":
                    "Bearer \(try issuer.issue(userID: userID, role: role, sessionID: "s-\(userID)").token)"
            ])
    }

    /// The designers' posts (one photo each), made through `replica`: their ids.
    private func seedFailoverPosts(_ replica: ServiceProcess, issuer: AccessTokenIssuer) async throws -> [String] {
        try await withRPCClient(configuration: replica.clientConfiguration()) { client in
            let api = YediContent.ContentService.Client(client)
            var posts: [String] = []
            for designer in 0..<Self.failoverDesigners {
                let options = try Self.caller("bench-fail-designer-\(designer)", role: .designer, issuer: issuer)
                let photo = try await api.uploadImage(
                    .init(data: BenchImages.jpeg(kib: 8, variant: UInt8(designer))), options: options)
                for index in 0..<Self.failoverPostsPerDesigner {
                    posts.append(
                        try await api.createPost(
                            .init(
                                title: "스타일 \(designer)-\(index)", description: "벤치 게시물", priceKRW: 45_000,
                                category: .cut, photoIDs: [photo.id]),
                            options: options
                        ).id)
                }
            }
            return posts
        }
    }

    /// The bench members' likes in the database ("post member"), and how many posts' `like_count`
    /// differs from their like rows.
    private func storedLikes(_ database: BenchPostgres) async throws -> (likes: Set<String>, countsOff: Int) {
        let connection = try await database.connect()
        do {
            let rows = try await connection.query(
                "SELECT post_id, user_id FROM post_like WHERE user_id LIKE 'bench-fail-%'", logger: BenchPostgres.logger
            )
            var likes = Set<String>()
            for try await (post, member) in rows.decode((String, String).self) { likes.insert("\(post) \(member)") }
            let off = try await connection.query(
                """
                SELECT count(*) FROM post p
                WHERE like_count <> (SELECT count(*) FROM post_like l WHERE l.post_id = p.id)
                """,
                logger: BenchPostgres.logger
            ).collect()[0].decode(Int.self)
            try await connection.close()
            return (likes, off)
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// The failover run's acknowledged likes ("post member"), from many tasks.
final class LikeLedger: Sendable {
    private let likes = Mutex<Set<String>>([])

    func acknowledged(post: String, member: String) { likes.withLock { _ = $0.insert("\(post) \(member)") } }
    var acknowledgedLikes: Set<String> { likes.withLock { $0 } }
}
