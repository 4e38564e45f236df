import Foundation
import RPCAccess
import RPCCore
import ServiceRuntime
import ServiceTestSupport
import XCTest
import YediProto

@testable import AccountService
@testable import ContentService

/// What Housetainer's community tests share: AccountService and ContentService over TLS with the
/// repository's app files, members' tokens, their uploads and their events.
class HousetainerCommunityTestCase: XCTestCase {
    static let appsFolder = ServiceHarness.repositoryApps

    var fixture: ContentFixture!

    override func setUp() async throws {
        fixture = try await ContentFixture.start(apps: Self.appsFolder)
    }

    override func tearDown() async throws {
        try await fixture?.stop()
        fixture = nil
    }

    var community: YediHousetainer.Community.Client { YediHousetainer.Community.Client(fixture.contentClient) }

    /// A token of `id` in `app` with `role`.
    func member(_ id: String, app: AppID = "housetainer", role: UserRole = "member") throws -> CallOptions {
        fixture.options(try fixture.harness.token(user: id, role: role, app: app, now: fixture.clock.now))
    }

    var admin: CallOptions { get throws { try member("ht-admin", role: "admin") } }

    /// Makes `id` a Housetainer member in AccountService behind its RPCs (an account and its member row),
    /// for what checks that members exist (`Block`, a house's `owner_id`) and for the directory.
    func enroll(_ id: String, nickname: String? = nil, type: String = "a") async throws {
        let environment = fixture.account.environment
        let user = UserRecord(
            id: id, role: "member", app: "housetainer", email: "\(id)@example.kr", name: nickname ?? "", phone: "",
            gender: 0, birthDate: nil, passwordHash: nil, createdAtMilliseconds: 0, nickname: nickname)
        let accounts = SQLiteAccountStore(
            database: environment.database, events: AccountEvents(outbox: environment.outbox),
            revokedUsers: environment.revokedUsers)
        let session = SessionRecord(
            id: "s-\(id)", familyID: "s-\(id)", userID: id, refreshHash: Array("hash-\(id)".utf8),
            createdAtMilliseconds: 0, expiresAtMilliseconds: 1)
        try await accounts.createUser(user, designer: nil, session: session)
        try await environment.database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO housetainer_member (user_id, app, type, inviter_id, invited, created_at_ms)
                    VALUES (?, 'housetainer', ?, NULL, 0, 0)
                    """,
                arguments: [id, type])
        }
    }

    private var seed = UInt8(0)

    /// An image uploaded by `options`' member.
    func upload(_ options: CallOptions) async throws -> String {
        seed &+= 1
        return try await fixture.api.uploadImage(
            .init(data: SampleImages.png(width: 4, height: 3, seed: seed)), options: options
        ).id
    }

    /// Valid event fields with one fresh image of the member's, an hour from now unless told.
    func fields(_ options: CallOptions, title: String = "집들이", at: Int64? = nil) async throws
        -> YediHousetainer.EventFields
    {
        YediHousetainer.EventFields(
            title: title, scheduleType: .host, atMs: at ?? fixture.clock.nowMilliseconds + 3_600_000,
            detail: "저녁 일곱 시", link: "https://example.kr/party", imageIDs: [try await upload(options)])
    }

    /// A displayed event of `options`' member.
    func displayedEvent(_ options: CallOptions, title: String = "집들이", at: Int64? = nil) async throws
        -> YediHousetainer.Event
    {
        let event = try await community.createEvent(
            .init(clientID: UUID().uuidString, fields: try await fields(options, title: title, at: at)),
            options: options)
        return try await community.setEventDisplay(.init(eventID: event.id, displayed: true), options: try admin)
    }

    func notifications(_ options: CallOptions) async throws -> YediHousetainer.ListNotificationsResponse {
        try await community.listNotifications(.init(page: .init(limit: 50)), options: options)
    }

    /// A comment on an event (a house's 홈레터 when `house`) a millisecond after the last one, so "newest
    /// first" has one answer.
    func comment(_ target: String, house: Bool = false, _ text: String, by options: CallOptions) async throws
        -> YediHousetainer.Comment
    {
        fixture.clock.advance(by: 0.001)
        return try await community.addComment(
            .init(
                clientID: UUID().uuidString, target: .init(target: house ? .houseID(target) : .eventID(target)),
                content: text),
            options: options)
    }

    func assertRefused(
        _ code: StatusCode, field: String, file: StaticString = #filePath, line: UInt = #line,
        _ call: () async throws -> Void
    ) async {
        let error = await rpcError(call)
        XCTAssertEqual(error?.code, code, error?.message ?? "succeeded", file: file, line: line)
        XCTAssertTrue(
            error?.message.hasPrefix(field) == true, "\"\(error?.message ?? "")\" names \(field)", file: file,
            line: line)
    }
}
