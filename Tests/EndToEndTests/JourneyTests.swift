import Foundation
import RPCTestSupport
import ServiceTestSupport
import XCTest

/// The whole Yedi journey through the probe, against the four real executables as separate processes on
/// SQLite (`deploy/start.sh`).
final class JourneyTests: YediJourney {
    func testTheWholeJourney() throws {
        try runTheWholeJourney()
    }
}

/// The same journey with 3 replicas of every service on PostgreSQL (`deploy/start.sh --postgres
/// --replicas 3`): every call goes to any replica; the live stream is followed on one replica, which is
/// killed, and resumed on another; the development clock moves on every replica.
final class JourneyOnPostgresTests: YediJourney {
    override class var engine: YediSystem.Engine { .postgres(replicas: 3) }

    func testTheWholeJourneyOnThreeReplicasPerService() throws {
        try runTheWholeJourney()
    }
}

/// The whole Yedi journey through the probe: a designer sets up shop and posts, a customer finds,
/// follows, likes, consults, books, reviews, and finally deletes the account, after which no service keeps
/// anything of theirs. ChatService and BookingService (a replica of each, on PostgreSQL) are killed with
/// SIGKILL and restarted along the way.
class YediJourney: RunningSystemTestCase {
    private let account = "yedi.account.AccountService/"
    private let content = "yedi.content.ContentService/"
    private let booking = "yedi.booking.BookingService/"
    private let chat = "yedi.chat.ChatService/"

    /// The stream events a following probe printed so far (one JSON object per line).
    private func events(_ follower: RunningProcess) -> [[String: Any]] {
        follower.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Waits until the follower has printed an event for which `matches` holds.
    private func awaitEvent(
        _ follower: RunningProcess, timeout: TimeInterval = 20, _ matches: ([String: Any]) -> Bool
    ) -> [String: Any]? {
        var found: [String: Any]?
        _ = follower.waitForOutput(timeout: timeout) { _ in
            found = events(follower).first(where: matches)
            return found != nil
        }
        return found
    }

    /// Local dates in the shop's zone, counted from the processes' (real) today.
    private let seoul: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "Asia/Seoul")!
        return calendar
    }()

    private func date(daysFromToday days: Int) -> DateComponents {
        seoul.dateComponents([.year, .month, .day], from: Date().addingTimeInterval(Double(days) * 86_400))
    }

    private func json(_ date: DateComponents) -> String {
        #"{"year": \#(date.year!), "month": \#(date.month!), "day": \#(date.day!)}"#
    }

    /// The instant of `minute` after midnight of `date` in Seoul, in milliseconds.
    private func instant(_ date: DateComponents, minute: Int) -> Int64 {
        var components = date
        components.hour = minute / 60
        components.minute = minute % 60
        return Int64(seoul.date(from: components)!.timeIntervalSince1970 * 1000)
    }

    private func base64(_ bytes: [UInt8]) -> String { Data(bytes).base64EncodedString() }

    func runTheWholeJourney() throws {
        // — The designer signs up and sets up the schedule: 10:00–20:00, a 13:00–14:00 break, a closed day.
        let designer = try system.signUp(
            #"""
            {"email": "jiho@example.com", "password": "scissors99", "name": "박지호", "phone": "01098765432",
             "gender": "GENDER_MALE", "birthDate": {"year": 1988, "month": 11, "day": 3}, "role": "ROLE_DESIGNER",
             "designer": {"description": "펌 전문", "skills": ["펌"], "rank": "DESIGNER_RANK_PRINCIPAL",
               "shop": {"name": "살롱 드 서울", "phone": "0255551234",
                 "address": {"city": "서울", "district": "강남구 테헤란로", "detail": "3층"},
                 "latitude": 37.5, "longitude": 127.03}}}
            """#)
        let designerID = designer.string("user.id")
        let designerToken = designer.string("session.accessToken")
        XCTAssertFalse(designerID.isEmpty)

        // — AccountService's outbox sets the new designer up at BookingService (SetUpDesigner): customers'
        // reads find the shop's default hours and the catalogue menu before the designer has called anything.
        var menuCount = 0
        let setUp = try eventually(timeout: 30) {
            guard
                let menu = try? self.system.call(
                    "booking", self.booking + "GetMenu", #"{"designerId": "\#(designerID)"}"#)
            else { return false }
            menuCount = (menu.at("styles") as? [Any])?.count ?? 0
            return true
        }
        XCTAssertTrue(setUp, "SetUpDesigner arrived at BookingService")
        XCTAssertEqual(menuCount, 12)

        let schedule = try system.call(
            "booking", booking + "UpdateSchedule",
            #"""
            {"schedule": {"openingMinute": 600, "closingMinute": 1200, "timeZone": "Asia/Seoul", "slotMinutes": 60,
              "breaks": [{"startMinute": 780, "endMinute": 840}]}}
            """#, token: designerToken)
        XCTAssertEqual(schedule.string("timeZone"), "Asia/Seoul")
        let closedDay = date(daysFromToday: 3)
        let closed = try system.call(
            "booking", booking + "UpdateClosedDays", #"{"add": [\#(json(closedDay))]}"#, token: designerToken)
        XCTAssertEqual((closed.at("closedDays") as? [Any])?.count, 1)

        // — Photos and a post.
        var photoIDs: [String] = []
        for seed in [1, 2] as [UInt8] {
            let image = try system.call(
                "content", content + "UploadImage",
                #"{"data": "\#(base64(SampleImages.png(width: 32, height: 24, seed: seed)))", "contentType": "image/png"}"#,
                token: designerToken)
            XCTAssertEqual(image.at("width") as? Int, 32)
            photoIDs.append(image.string("id"))
        }
        let post = try system.call(
            "content", content + "CreatePost",
            #"""
            {"title": "가을 애즈펌", "description": "자연스러운 볼륨", "priceKrw": "85000", "category": "HAIR_CATEGORY_PERM",
             "photoIds": ["\#(photoIDs[0])", "\#(photoIDs[1])"]}
            """#, token: designerToken)
        let postID = post.string("id")
        XCTAssertEqual((post.at("photos") as? [Any])?.count, 2)

        // — The customer signs up, finds the designer by part of the name, follows, likes.
        _ = try system.signUp(
            #"""
            {"email": "minji@example.com", "password": "hair2024!", "name": "김민지", "phone": "01012345678",
             "gender": "GENDER_FEMALE", "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}
            """#)
        let signIn = try system.call(
            "account", account + "SignIn", #"{"email": "minji@example.com", "password": "hair2024!"}"#)
        let customerID = signIn.string("user.id")
        var customerToken = signIn.string("session.accessToken")

        let found = try system.call("account", account + "SearchDesigners", #"{"query": "지호"}"#, token: customerToken)
        XCTAssertEqual(found.string("designers.0.user.id"), designerID, "found by part of the name")
        let followed = try system.call(
            "account", account + "Follow", #"{"designerId": "\#(designerID)"}"#, token: customerToken)
        XCTAssertEqual(followed.string("followerCount"), "1")
        let liked = try system.call("content", content + "Like", #"{"postId": "\#(postID)"}"#, token: customerToken)
        XCTAssertEqual(liked.string("likeCount"), "1")

        let feed = try system.call(
            "content", content + "GetFeed", #"{"scope": "FEED_SCOPE_FOLLOWING"}"#, token: customerToken)
        XCTAssertEqual(feed.string("posts.0.id"), postID, "the followed designer's post is in the following feed")
        XCTAssertEqual(feed.at("posts.0.liked") as? Bool, true)
        XCTAssertEqual(feed.string("posts.0.author.name"), "박지호", "with the author's name from AccountService")

        // — The customer consults from the post (a room and a post-share message) and sends a photo, while
        // the designer follows their live stream with a second probe.
        let follower = try system.follow("chat", chat + "Subscribe", "{}", token: designerToken, replica: 0)
        let caughtUp = awaitEvent(follower) { $0["caughtUp"] != nil }
        XCTAssertNotNil(caughtUp, "the stream says when it is live: \(follower.errorOutput)")
        let opened = try system.call(
            "chat", chat + "OpenRoom", #"{"designerId": "\#(designerID)", "postId": "\#(postID)"}"#,
            token: customerToken)
        let roomID = opened.string("room.id")
        XCTAssertEqual(opened.string("postShare.postShare.postId"), postID)
        XCTAssertEqual(opened.string("postShare.postShare.firstPhoto.id"), photoIDs[0])
        let chatPhoto = try system.call(
            "content", content + "UploadImage",
            #"{"data": "\#(base64(SampleImages.png(width: 8, height: 8, seed: 9)))", "contentType": "image/png"}"#,
            token: customerToken
        ).string("id")
        let sent = try system.call(
            "chat", chat + "SendMessage",
            #"{"roomId": "\#(roomID)", "image": {"image": {"id": "\#(chatPhoto)"}}, "clientMessageId": "photo-1"}"#,
            token: customerToken)
        let seen = awaitEvent(follower) {
            ($0["messageAdded"] as? [String: Any])?.at("message.id") as? String == sent.string("id")
        }
        XCTAssertEqual(
            (seen?["messageAdded"] as? [String: Any])?.string("message.image.image.id"), chatPhoto,
            "the designer's live stream shows the photo: \(follower.output)")
        let lastSeenPosition = seen.map { $0.string("position") } ?? ""

        // — SIGKILL ChatService (the stream's replica): the designer's stream breaks; a message is sent while
        // they are away (through the restarted replica: it takes traffic again); the designer resumes from the
        // last position seen (on another replica, when there are several) and gets exactly what they missed.
        system.kill("chat", replica: 0)
        XCTAssertTrue(follower.waitForOutput(timeout: 20) { _ in follower.hasExited }, "the stream ended")
        try system.start("chat", replica: 0)
        let missed = try system.call(
            "chat", chat + "SendMessage",
            #"{"roomId": "\#(roomID)", "text": {"text": "사진처럼 하고 싶어요"}, "clientMessageId": "text-1"}"#,
            token: customerToken, replica: 0)
        let resumed = try system.follow(
            "chat", chat + "Subscribe", #"{"afterPosition": "\#(lastSeenPosition)"}"#, token: designerToken,
            replica: system.replicaCount - 1)
        XCTAssertNotNil(awaitEvent(resumed) { $0["caughtUp"] != nil }, "resumed: \(resumed.errorOutput)")
        let replayed = events(resumed).filter { $0["messageAdded"] != nil }
        XCTAssertEqual(
            replayed.map { ($0["messageAdded"] as? [String: Any])?.string("message.id") ?? "" }, [missed.string("id")],
            "exactly the message sent while away: no gap, no duplicate")
        resumed.kill()

        // — Booking: a free slot, then the break, the closed day and the taken slot are refused.
        let slots = try system.call(
            "booking", booking + "ListFreeSlots",
            #"{"designerId": "\#(designerID)", "from": \#(json(date(daysFromToday: 1))), "to": \#(json(date(daysFromToday: 7)))}"#
        )
        let days = try XCTUnwrap(slots.at("days") as? [[String: Any]])
        XCTAssertEqual(days.count, 7)
        let closedEntry = days.first { ($0["date"] as? [String: Any])?["day"] as? Int == closedDay.day }
        XCTAssertEqual(closedEntry?["closed"] as? Bool, true, "the closed day is closed")
        let open = try XCTUnwrap(
            days.first { $0["closed"] as? Bool == false && !(($0["freeStartAtMs"] as? [Any]) ?? []).isEmpty })
        let openDate = DateComponents(
            year: (open["date"] as? [String: Any])?["year"] as? Int,
            month: (open["date"] as? [String: Any])?["month"] as? Int,
            day: (open["date"] as? [String: Any])?["day"] as? Int)
        let free = try XCTUnwrap((open["freeStartAtMs"] as? [String])?.compactMap { Int64($0) })
        XCTAssertEqual(free.first, instant(openDate, minute: 600), "the first slot is at opening")
        XCTAssertFalse(free.contains(instant(openDate, minute: 780)), "no slot in the break")

        let menu = try system.call("booking", booking + "GetMenu", #"{"designerId": "\#(designerID)"}"#)
        let styleID = menu.string("styles.0.id")
        XCTAssertFalse(styleID.isEmpty, "a new designer starts with the catalogue")
        func reserve(_ start: Int64, key: String) throws -> [String: Any] {
            try system.call(
                "booking", booking + "CreateReservation",
                #"{"designerId": "\#(designerID)", "startAtMs": "\#(start)", "styleIds": ["\#(styleID)"], "idempotencyKey": "\#(key)"}"#,
                token: customerToken)
        }
        func refusal(_ start: Int64, key: String) throws -> String {
            try system.failingCall(
                "booking", booking + "CreateReservation",
                #"{"designerId": "\#(designerID)", "startAtMs": "\#(start)", "styleIds": ["\#(styleID)"], "idempotencyKey": "\#(key)"}"#,
                token: customerToken
            ).status
        }
        let reservation = try reserve(instant(openDate, minute: 600), key: "first")
        let reservationID = reservation.string("id")
        XCTAssertFalse(reservationID.isEmpty)
        XCTAssertEqual(try refusal(instant(openDate, minute: 780), key: "break"), "FAILED_PRECONDITION", "the break")
        XCTAssertEqual(try refusal(instant(closedDay, minute: 600), key: "closed"), "FAILED_PRECONDITION", "closed")
        XCTAssertEqual(try refusal(instant(openDate, minute: 600), key: "again"), "ALREADY_EXISTS", "taken")

        // — Payments with the development provider: one paid and cancelled (refunded by the default policy),
        // one paid and kept; the operators' ledger check agrees with the provider.
        func pay(_ start: Int64, key: String) throws -> (reservation: String, order: String) {
            let id = try reserve(start, key: key).string("id")
            let prepared = try system.call(
                "booking", booking + "PreparePayment", #"{"reservationId": "\#(id)"}"#, token: customerToken)
            XCTAssertEqual(prepared.string("status"), "PAYMENT_STATUS_PREPARED")
            let order = prepared.string("orderId")
            let paid = try system.call(
                "booking", booking + "ConfirmPayment",
                #"{"orderId": "\#(order)", "paymentKey": "dev_ok_\#(key)", "amountKrw": "\#(prepared.string("amountKrw"))"}"#,
                token: customerToken)
            XCTAssertEqual(paid.string("status"), "PAYMENT_STATUS_PAID")
            return (id, order)
        }
        let cancelledPayment = try pay(instant(openDate, minute: 660), key: "paid-cancelled")
        let cancelled = try system.call(
            "booking", booking + "CancelReservation",
            #"{"reservationId": "\#(cancelledPayment.reservation)", "reason": "CANCEL_REASON_SCHEDULE_CHANGE", "note": "출장"}"#,
            token: customerToken)
        XCTAssertGreaterThanOrEqual(Int(cancelled.string("refundedKrw")) ?? 0, 1, "refunded by the policy")
        _ = try pay(instant(openDate, minute: 720), key: "paid-kept")
        let ledger = try system.runProbe(["ledger-check", system.address("booking")])
        XCTAssertEqual(ledger.exitCode, 0, "ledger-check: \(ledger.output)\(ledger.errorOutput)")

        // — SIGKILL BookingService (a replica) and restart it on its data: the acknowledged reservation is there.
        system.kill("booking", replica: 0)
        try system.start("booking", replica: 0)
        let upcoming = try system.call(
            "booking", booking + "ListReservations", #"{"filter": "RESERVATION_FILTER_UPCOMING"}"#, token: customerToken
        )
        XCTAssertEqual(upcoming.string("reservations.0.id"), reservationID, "the reservation survived SIGKILL")
        XCTAssertEqual((upcoming.at("reservations") as? [Any])?.count, 2, "and only once (with the paid one)")

        // — The clocks move past the reservation (development clocks); the customer signs in again (the
        // old token expired in the services' eyes) and reviews with keywords and a photo.
        try system.advanceClocks(seconds: 864_000)
        customerToken = try system.call(
            "account", account + "SignIn", #"{"email": "minji@example.com", "password": "hair2024!"}"#
        ).string("session.accessToken")
        let reviewPhoto = try system.call(
            "content", content + "UploadImage",
            #"{"data": "\#(base64(SampleImages.jpeg(width: 16, height: 16)))", "contentType": "image/jpeg"}"#,
            token: customerToken
        ).string("id")
        // Every replica serves the photo uploaded through one (its bytes are in the database on PostgreSQL).
        for replica in 0..<system.replicaCount {
            let image = try system.call(
                "content", content + "GetImage", #"{"imageId": "\#(reviewPhoto)"}"#, token: customerToken,
                replica: replica)
            XCTAssertFalse(image.string("data").isEmpty, "replica \(replica + 1) has no bytes for \(reviewPhoto)")
        }
        // ContentService asks BookingService, which was killed and restarted above.
        let review = try system.callRetryingUnavailable(
            "content", content + "CreateReview",
            #"""
            {"reservationId": "\#(reservationID)", "score": 5, "text": "볼륨이 오래가요", "photoIds": ["\#(reviewPhoto)"],
             "keywords": ["REVIEW_KEYWORD_KIND", "REVIEW_KEYWORD_STYLE_AS_WANTED"]}
            """#, token: customerToken)
        XCTAssertEqual(review.string("designerId"), designerID)

        let profile = try system.call("account", account + "GetDesigner", #"{"designerId": "\#(designerID)"}"#)
        XCTAssertEqual(profile.at("reviews.rating") as? Double, 5)
        XCTAssertEqual(profile.string("reviews.reviewCount"), "1")
        let keywords = (profile.at("reviews.keywordCounts") as? [[String: Any]])?.compactMap {
            $0["keyword"] as? String
        }
        XCTAssertEqual(Set(keywords ?? []), ["REVIEW_KEYWORD_KIND", "REVIEW_KEYWORD_STYLE_AS_WANTED"])
        XCTAssertEqual(profile.string("followerCount"), "1")

        // — The customer deletes the account. The other services purge through Account's outbox: wait until
        // it has delivered (its rows name the customer until then); then no table or file of any service
        // names the customer.
        _ = try system.call("account", account + "DeleteAccount", #"{"password": "hair2024!"}"#, token: customerToken)
        let gone = try system.failingCall("account", account + "GetMe", "{}", token: customerToken)
        XCTAssertEqual(gone.status, "UNAUTHENTICATED", gone.message)
        let delivered = try eventually(timeout: 30) { try system.find(customerID, in: "account").isEmpty }
        let left = try system.find(customerID, in: "account")
        XCTAssertTrue(delivered, "Account's outbox still holds the purge: \(left)")
        // The customer's payments are kept for accounting without naming them (docs/payments.md,
        // "Retention"), and the ledger still balances.
        let kept = try system.runProbe(["ledger-check", system.address("booking")])
        XCTAssertEqual(kept.exitCode, 0, "ledger-check after the deletion: \(kept.output)\(kept.errorOutput)")
        let results = system.stopAll()
        for (service, result) in results {
            XCTAssertEqual(result.exitCode, 0, "\(service) stopped cleanly:\n\(result.errorOutput.suffix(2000))")
        }
        let findings =
            try DataScan.find(customerID, in: system.root.appendingPathComponent("data"))
            + YediSystem.services.flatMap { try system.findInDatabase(customerID, of: $0) }
        XCTAssertEqual(findings.map(\.place), [], "the deleted customer \(customerID) is still somewhere")
        let designerPosts = try system.find(postID, in: "content")
        XCTAssertFalse(designerPosts.isEmpty, "the designer's own data stays (the scan can find things)")
    }
}

/// Polls `condition` every 100 ms until it holds or `timeout` seconds pass.
func eventually(timeout: TimeInterval, _ condition: () throws -> Bool) throws -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    repeat {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.1)
    } while Date() < deadline
    return try condition()
}
