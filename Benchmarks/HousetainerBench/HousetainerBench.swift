import AccessTokens
import ArgumentParser
import BenchSupport
import Foundation
import GRDB
import Histogram
import RPCCore
import YediImaging
import YediProto

/// Housetainer as it runs (issue 29): the real `ContentService` and `AccountService` executables (found
/// next to this one) with the repository's app files, as child processes on a throwaway dev PKI, over TLS.
///
///     swift build -c release --product ContentService && swift build -c release --product AccountService \
///         && swift build -c release --product housetainer-bench
///     $(swift build -c release --show-bin-path)/housetainer-bench
///
/// Prints JSON lines: `ListEvents(ONGOING)` first pages p50/p99 with `--events` displayed events of
/// `--owners` owners, for a reader who blocks `--blocked` of them; `AddComment` p50/p99 on an event with
/// `--bookmarkers` bookmarkers (each comment writes a notification and a push job per bookmarker and the
/// owner, in its transaction); a notification page (10, newest first, with the unread count) p50/p99 of
/// the owner after those comments; invitations created per second by `--clients` clients of distinct
/// members; image uploads per second with variants (`UploadImage` with a member's token, a 12-megapixel
/// phone JPEG, `--upload-clients` clients; each upload makes the platform's variants). Rows are written
/// into the stopped services' databases (their own schema from a first start); tokens are signed with the
/// PKI's key.
@main
struct HousetainerBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "housetainer-bench",
        abstract: "Housetainer's event pages, comments, notification pages and invitations against the real processes.")

    @OptionGroup var pkiOptions: PKIOptions

    @Option(help: "The app files (deploy/apps).")
    var apps = "deploy/apps"

    @Option(help: "Displayed upcoming events.")
    var events = 100_000

    @Option(help: "Members who own them (round robin).")
    var owners = 5_000

    @Option(help: "Owners the reader blocks.")
    var blocked = 1_000

    @Option(help: "Bookmarkers of the commented event.")
    var bookmarkers = 1_000

    @Option(help: "Members creating invitations (3 each, the quota), and concurrent clients among them.")
    var inviters = 3_000

    @Option(help: "Concurrent inviting clients (each its own TLS connection).")
    var clients = 32

    @Option(help: "Clients uploading images (each its own member, one upload at a time).")
    var uploadClients = 4

    @Option(help: "Seconds each timed run lasts.")
    var seconds = 8.0

    @Flag(help: "Keep the temporary folder (PKI, data, the services' logs).")
    var keep = false

    static let app = "housetainer"

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent(
            "yedi-housetainer-bench-\(ProcessInfo.processInfo.processIdentifier)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if !keep { try? FileManager.default.removeItem(at: work) } }
        let pki = try pkiOptions.folder(in: work)
        let issuer = AccessTokenIssuer(
            signingKey: try TokenSigningKey.load(pemFile: pki + "/token-signing.key"), lifetime: .seconds(3_600))
        let token: @Sendable (String) throws -> String = { user in
            try issuer.issue(userID: user, role: "member", sessionID: "s-\(user)", app: "housetainer").token
        }

        let accountPort = try ServiceProcess.freePort()
        let contentPort = try ServiceProcess.freePort()
        let nowhere = try ServiceProcess.freePort()
        let accountData = work.appendingPathComponent("account").path
        let contentData = work.appendingPathComponent("content").path
        func startAccount(_ run: Int) async throws -> ServiceProcess {
            try await ServiceProcess.start(
                try ServiceProcess.besideThisExecutable("AccountService"), name: "AccountService", port: accountPort,
                pki: pki, data: accountData, log: work.appendingPathComponent("account-\(run).log").path,
                arguments: [
                    "--apps", apps, "--peer", "content=127.0.0.1:\(contentPort)",
                    "--peer", "booking=127.0.0.1:\(nowhere)", "--peer", "chat=127.0.0.1:\(nowhere)",
                ])
        }
        func startContent(_ run: Int) async throws -> ServiceProcess {
            try await ServiceProcess.start(
                try ServiceProcess.besideThisExecutable("ContentService"), name: "ContentService", port: contentPort,
                pki: pki, data: contentData, log: work.appendingPathComponent("content-\(run).log").path,
                arguments: [
                    "--apps", apps, "--peer", "account=127.0.0.1:\(accountPort)",
                    "--peer", "booking=127.0.0.1:\(nowhere)", "--peer", "chat=127.0.0.1:\(nowhere)",
                    "--image-port", "\(try ServiceProcess.freePort())",
                    // The upload run sends more than a member's daily bytes.
                    "--quota", "uploads.day-bytes=1000000000000", "--quota", "uploads.total-bytes=1000000000000",
                ])
        }

        // First starts make the schemas; one image is uploaded for every seeded event to show.
        try await startAccount(1).stop()
        var content = try await startContent(1)
        let imageID = try await withRPCClient(configuration: content.clientConfiguration()) { client in
            try await YediContent.ContentService.Client(client).uploadImage(
                .init(data: Self.png, contentType: "image/png"), options: Self.options(try token("hb-owner-0"))
            ).id
        }
        try content.stop()

        let now = Int64(Date().timeIntervalSince1970 * 1_000)
        try await seedAccount(try Self.database(in: accountData), now: now)
        try await seedContent(try Self.database(in: contentData), imageID: imageID, now: now)

        let account = try await startAccount(2)
        defer { try? account.stop() }
        content = try await startContent(2)
        defer { try? content.stop() }
        try await listEvents(content, token: try token("hb-reader"))
        try await comments(content, writer: try token("hb-writer"), owner: try token("hb-owner-0"))
        try await invitations(account, token: token)
        try await uploads(content, token: token)
    }

    // MARK: Seeding

    /// The `.sqlite` file a service made in `folder`.
    static func database(in folder: String) throws -> String {
        guard
            let name = try FileManager.default.contentsOfDirectory(atPath: folder).first(where: {
                $0.hasSuffix(".sqlite")
            })
        else { throw BenchError("no database in \(folder)") }
        return folder + "/" + name
    }

    /// Members (accounts with a member row): the owners, the reader, the writer, the bookmarkers and
    /// the inviters, so the directory knows them.
    private func seedAccount(_ path: String, now: Int64) async throws {
        let database = try DatabaseQueue(path: path)
        defer { try? database.close() }
        let ids =
            (0..<owners).map { "hb-owner-\($0)" } + ["hb-reader", "hb-writer"]
            + (0..<bookmarkers).map { "hb-fan-\($0)" } + (0..<inviters).map { "hb-inviter-\($0)" }
        try await database.write { db in
            for (index, id) in ids.enumerated() {
                try db.execute(
                    sql: """
                        INSERT INTO user (id, role, app, email, name, phone, gender, created_at_ms, nickname)
                        VALUES (?, 'member', 'housetainer', ?, ?, '', 0, ?, ?)
                        """,
                    arguments: [id, "\(id)@example.kr", "회원\(index)", now, Self.nickname(index)])
                try db.execute(
                    sql: """
                        INSERT INTO housetainer_member (user_id, app, type, inviter_id, invited, created_at_ms)
                        VALUES (?, 'housetainer', 'a', NULL, 0, ?)
                        """,
                    arguments: [id, now])
            }
        }
    }

    /// A nickname of letters only, distinct per index.
    static func nickname(_ index: Int) -> String {
        let letters = Array("가나다라마바사아자차카타파하")
        var value = index
        var name = "회"
        repeat {
            name.append(letters[value % letters.count])
            value /= letters.count
        } while value > 0
        return name
    }

    /// `--events` displayed events from an hour ahead, a minute apart, owners round robin; the reader's
    /// blocks of the first `--blocked` owners; the commented event (the first owner's, latest) with its
    /// bookmarkers.
    private func seedContent(_ path: String, imageID: String, now: Int64) async throws {
        let database = try DatabaseQueue(path: path)
        defer { try? database.close() }
        try await database.write { [events, owners, blocked, bookmarkers] db in
            for index in 0..<events {
                let id = String(format: "hb-event-%07d", index)
                try db.execute(
                    sql: """
                        INSERT INTO housetainer_event (id, app, owner_id, client_id, title, schedule_type, at_ms,
                            detail, link, displayed, created_at_ms, updated_at_ms)
                        VALUES (?, 'housetainer', ?, ?, '집들이', 1, ?, '저녁 일곱 시에 만나요', '', 1, ?, ?)
                        """,
                    arguments: [
                        id, "hb-owner-\(index % owners)", id, now + 3_600_000 + Int64(index) * 60_000, now, now,
                    ])
                try db.execute(
                    sql: "INSERT INTO housetainer_event_image (event_id, position, image_id) VALUES (?, 0, ?)",
                    arguments: [id, imageID])
            }
            for index in 0..<blocked {
                try db.execute(
                    sql: """
                        INSERT INTO housetainer_block (blocker_id, blocked_id, app, created_at_ms)
                        VALUES ('hb-reader', ?, 'housetainer', ?)
                        """,
                    arguments: ["hb-owner-\(index)", now])
            }
            for index in 0..<bookmarkers {
                try db.execute(
                    sql: "INSERT INTO housetainer_bookmark (member_id, event_id, created_at_ms) VALUES (?, ?, ?)",
                    arguments: ["hb-fan-\(index)", Self.commented, now])
            }
        }
    }

    /// The first owner's first event: the one commented on.
    static let commented = "hb-event-0000000"

    // MARK: Timed runs

    /// One client, one call at a time: the reader's first page of upcoming events (10).
    private func listEvents(_ process: ServiceProcess, token: String) async throws {
        let histogram = try await timedCalls(process) { connection in
            let page = try await YediHousetainer.Community.Client(connection).listEvents(
                .init(period: .ongoing), options: Self.options(token))
            precondition(page.events.count == 10, "\(page.events.count) events")
        }
        print(
            #"{"bench":"housetainer-list-events","events":\#(events),"owners":\#(owners),"blocked":\#(blocked),"#
                + #""calls":\#(histogram.totalCount),"#
                + #""p50_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(histogram.valueAtPercentile(99))),"tls":true}"#)
    }

    /// One client, one call at a time: comments on the event with `--bookmarkers` bookmarkers; then the
    /// owner's notification page.
    private func comments(_ process: ServiceProcess, writer: String, owner: String) async throws {
        let added = try await timedCalls(process) { connection in
            _ = try await YediHousetainer.Community.Client(connection).addComment(
                .init(
                    clientID: UUID().uuidString, target: .init(target: .eventID(Self.commented)),
                    content: "저도 갈게요"),
                options: Self.options(writer))
        }
        print(
            #"{"bench":"housetainer-add-comment","bookmarkers":\#(bookmarkers),"calls":\#(added.totalCount),"#
                + #""p50_ms":\#(Figures.milliseconds(added.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(added.valueAtPercentile(99))),"tls":true}"#)
        let pages = try await timedCalls(process) { connection in
            let page = try await YediHousetainer.Community.Client(connection).listNotifications(
                .init(), options: Self.options(owner))
            precondition(page.notifications.count == 10, "\(page.notifications.count) notifications")
        }
        print(
            #"{"bench":"housetainer-notification-page","notifications":\#(added.totalCount),"#
                + #""calls":\#(pages.totalCount),"#
                + #""p50_ms":\#(Figures.milliseconds(pages.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(pages.valueAtPercentile(99))),"tls":true}"#)
    }

    /// `--clients` clients, each inviting with its share of the inviters (3 invitations each, the quota),
    /// until the time is up or the inviters run out.
    private func invitations(_ process: ServiceProcess, token: @escaping @Sendable (String) throws -> String)
        async throws
    {
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int(seconds * 1_000))
        let (created, refused) = try await withThrowingTaskGroup(of: (Int, Int).self) {
            [clients, inviters] group in
            for client in 0..<clients {
                group.addTask {
                    try await withRPCClient(configuration: process.clientConfiguration()) { connection in
                        let members = YediHousetainer.Members.Client(connection)
                        var (created, refused) = (0, 0)
                        var inviter = client
                        while inviter < inviters, ContinuousClock.now < end {
                            let options = Self.options(try token("hb-inviter-\(inviter)"))
                            for guest in 0..<3 {
                                do {
                                    _ = try await members.createInvitation(
                                        .init(inviteeEmail: "guest-\(inviter)-\(guest)@example.kr", inviteeName: "손님"),
                                        options: options)
                                    created += 1
                                } catch is RPCError {
                                    refused += 1
                                }
                            }
                            inviter += clients
                        }
                        return (created, refused)
                    }
                }
            }
            var total = (0, 0)
            for try await (created, refused) in group { total = (total.0 + created, total.1 + refused) }
            return total
        }
        let elapsed = Figures.seconds(ContinuousClock.now - start)
        print(
            #"{"bench":"housetainer-create-invitation","clients":\#(clients),"created":\#(created),"#
                + #""refused":\#(refused),"seconds":\#(Figures.format(elapsed)),"#
                + #""per_second":\#(Figures.format(Double(created) / elapsed)),"tls":true}"#)
    }

    /// Uploads per second of a 12-megapixel JPEG (4032×3024, a phone's), four different photos in turn, so
    /// that every upload decodes and resizes.
    private func uploads(_ process: ServiceProcess, token: @escaping @Sendable (String) throws -> String)
        async throws
    {
        let (width, height) = (4_032, 3_024)
        var photos: [[UInt8]] = []
        for seed in 0..<4 {
            photos.append(
                try PixelEncoder.encode(
                    SyntheticPhoto.pixels(width: width, height: height, seed: seed * 50), width: width, height: height,
                    bands: 3, as: .jpeg(quality: 90)))
        }
        let photoSet = photos
        let result = try await withRPCClient(configuration: process.clientConfiguration(maxFrameBytes: 11 << 20)) {
            connection in
            let api = YediContent.ContentService.Client(connection)
            return try await closedLoop(clients: uploadClients, seconds: seconds) { client, index in
                let image = try await api.uploadImage(
                    .init(data: photoSet[(client + index) % photoSet.count]),
                    options: Self.options(try token("hb-uploader-\(client)")))
                guard !image.id.isEmpty else { throw BenchError("an upload came back without an id") }
            }
        }
        print(
            #"{"bench":"housetainer-upload-image","pixels":\#(width * height),"bytes":\#(photos[0].count),"#
                + #""clients":\#(uploadClients),"uploads":\#(result.calls),"#
                + #""per_second":\#(Figures.format(Double(result.calls) / result.seconds)),"#
                + #""p50_ms":\#(Figures.milliseconds(result.latencies.valueAtPercentile(50))),"#
                + #""p99_ms":\#(Figures.milliseconds(result.latencies.valueAtPercentile(99))),"tls":true}"#)
    }

    private func timedCalls(
        _ process: ServiceProcess, _ call: @escaping @Sendable (RPCClient) async throws -> Void
    ) async throws -> Histogram<UInt64> {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        return try await withRPCClient(configuration: process.clientConfiguration()) { connection in
            var histogram = Figures.newHistogram()
            while ContinuousClock.now < end {
                let callStart = ContinuousClock.now
                try await call(connection)
                histogram.record(Figures.nanoseconds(ContinuousClock.now - callStart))
            }
            return histogram
        }
    }

    static func options(_ token: String) -> CallOptions {
        CallOptions(timeout: .seconds(30), metadata: ["authorization": "Bearer \(token)"])
    }

    /// A 2×2 PNG: the one image every seeded event shows.
    static let png: [UInt8] = Array(
        Data(
            base64Encoded:
                "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEElEQVR4nGM4UaEBRAwQCgAp7gWhjAnOiAAAAABJRU5ErkJggg=="
        ) ?? Data())
}
