import ProtoBridge
import ProtoTestSupport
import RPCCore
import XCTest
import YediProto

/// Bytes from Google's implementation (`protoc --encode`) decode to the expected Swift values, and our
/// bytes decode with `protoc --decode` to the expected text: one representative message per service.
final class GoogleProtobufInteropTests: XCTestCase {
    override func setUpWithError() throws {
        try XCTSkipUnless(FileManager.default.isExecutableFile(atPath: "/usr/bin/protoc"), "protoc is not installed")
    }

    // MARK: protoc --encode → ours

    func testAccountUserFromProtoc() throws {
        let text = """
            id: "9b2f0c1e-6a43-4f5e-8f7a-0d1c2b3a4e5f"
            role: ROLE_DESIGNER
            name: "\(Protoc.textEscaped("김예디 원장 ✂️"))"
            email: "yedi@example.com"
            phone: "01012345678"
            gender: GENDER_FEMALE
            birth_date { year: 1990 month: 3 day: 7 }
            created_at_ms: 1697778000000
            """
        let bytes = try Protoc.encode(text, as: "yedi.account.User", file: "account.proto")
        let expected = YediAccount.User(
            id: "9b2f0c1e-6a43-4f5e-8f7a-0d1c2b3a4e5f", role: .designer, name: "김예디 원장 ✂️",
            email: "yedi@example.com", phone: "01012345678", gender: .female,
            birthDate: .init(year: 1990, month: 3, day: 7), createdAtMs: 1_697_778_000_000)
        XCTAssertEqual(try YediAccount.User(serializedBytes: bytes), expected)
    }

    func testContentPostFromProtoc() throws {
        let text = """
            id: "p-1"
            designer_id: "d-1"
            title: "\(Protoc.textEscaped("허쉬컷 💇‍♀️"))"
            description: "\(Protoc.textEscaped("손상이 적어요"))"
            price_krw: 46000
            category: HAIR_CATEGORY_CUT
            photos { id: "i-1" url: "https://cdn.yedi.example/i-1" width: 1080 height: 1350 }
            photos { id: "i-2" }
            like_count: -3
            liked: true
            created_at_ms: -1
            """
        let bytes = try Protoc.encode(text, as: "yedi.content.Post", file: "content.proto")
        let post = try YediContent.Post(serializedBytes: bytes)
        XCTAssertEqual(
            post,
            YediContent.Post(
                id: "p-1", designerID: "d-1", title: "허쉬컷 💇‍♀️", description: "손상이 적어요", priceKRW: 46_000,
                category: .cut,
                photos: [
                    .init(id: "i-1", url: "https://cdn.yedi.example/i-1", width: 1080, height: 1350), .init(id: "i-2"),
                ],
                likeCount: -3, liked: true, createdAtMs: -1))
    }

    func testBookingReservationFromProtoc() throws {
        let text = """
            id: "r-1"
            start_at_ms: 9223372036854775807
            styles { id: "s-1" name: "\(Protoc.textEscaped("애즈펌"))" category: HAIR_CATEGORY_PERM price_krw: 85000 }
            styles { id: "s-2" name: "\(Protoc.textEscaped("뿌리염색"))" category: HAIR_CATEGORY_COLOR price_krw: 85000 }
            total_price_krw: 170000
            status: RESERVATION_STATUS_CONFIRMED
            days_left: -2
            """
        let bytes = try Protoc.encode(text, as: "yedi.booking.Reservation", file: "booking.proto")
        let reservation = try YediBooking.Reservation(serializedBytes: bytes)
        XCTAssertEqual(reservation.startAtMs, .max)
        XCTAssertEqual(reservation.styles.map(\.name), ["애즈펌", "뿌리염색"])
        XCTAssertEqual(reservation.styles.map(\.category), [.perm, .color])
        XCTAssertEqual(reservation.totalPriceKRW, 170_000)
        XCTAssertEqual(reservation.status, .confirmed)
        XCTAssertEqual(reservation.daysLeft, -2)
    }

    func testChatRoomEventWithOneofFromProtoc() throws {
        let text = """
            position: 42
            message_added {
              message {
                id: "m-1"
                room_id: "room"
                post_share { post_id: "p-1" text: "\(Protoc.textEscaped("이 게시물 보고 상담하러 왔어요"))" }
              }
            }
            """
        let bytes = try Protoc.encode(text, as: "yedi.chat.StreamEvent", file: "chat.proto")
        let event = try YediChat.StreamEvent(serializedBytes: bytes)
        XCTAssertEqual(event.position, 42)
        XCTAssertEqual(
            event.event,
            .messageAdded(
                .init(
                    message: .init(
                        id: "m-1", roomID: "room", body: .postShare(.init(postID: "p-1", text: "이 게시물 보고 상담하러 왔어요"))))))
    }

    func testRPCFrameFromProtoc() throws {
        let text = """
            call_id: 18446744073709551615
            kind: FRAME_KIND_END
            metadata { key: "request-id" value: "abc" }
            status { code: 5 message: "no such post" }
            """
        let bytes = try Protoc.encode(text, as: "yedi.rpc.Frame", file: "rpc.proto")
        XCTAssertEqual(
            try YediRPC.Frame(serializedBytes: bytes),
            YediRPC.Frame(
                callID: .max, kind: .end, metadata: [.init(key: "request-id", value: "abc")],
                status: .init(code: 5, message: "no such post")))
    }

    // MARK: ours → protoc --decode

    func testOursDecodedByProtoc() throws {
        let user = YediAccount.User(id: "u-1", role: .customer, name: "홍길동 🙂", createdAtMs: -7)
        XCTAssertEqual(
            try Protoc.decode(user.serializedBytes(), as: "yedi.account.User", file: "account.proto"),
            """
            id: "u-1"
            role: ROLE_CUSTOMER
            name: "\(Protoc.textEscaped("홍길동 🙂"))"
            created_at_ms: -7

            """)

        let review = YediContent.Review(id: "rv", score: 5, keywords: [.trendy, .fairPrice, .init(rawValue: 99)])
        XCTAssertEqual(
            try Protoc.decode(review.serializedBytes(), as: "yedi.content.Review", file: "content.proto"),
            """
            id: "rv"
            score: 5
            keywords: REVIEW_KEYWORD_TRENDY
            keywords: REVIEW_KEYWORD_FAIR_PRICE
            keywords: 99

            """)

        let schedule = YediBooking.Schedule(
            designerID: "d", openingMinute: 540, closingMinute: 1260,
            breaks: [.init(startMinute: 720, endMinute: 780)], closedDays: [.init(year: 2026, month: 12, day: 25)],
            closedWeekdays: [.sunday], slotMinutes: 30)
        XCTAssertEqual(
            try Protoc.decode(schedule.serializedBytes(), as: "yedi.booking.Schedule", file: "booking.proto"),
            """
            designer_id: "d"
            opening_minute: 540
            closing_minute: 1260
            breaks {
              start_minute: 720
              end_minute: 780
            }
            closed_days {
              year: 2026
              month: 12
              day: 25
            }
            closed_weekdays: WEEKDAY_SUNDAY
            slot_minutes: 30

            """)

        let message = YediChat.SendMessageRequest(roomID: "r", body: .text(.init(text: "")), clientMessageID: "c")
        XCTAssertEqual(
            try Protoc.decode(message.serializedBytes(), as: "yedi.chat.SendMessageRequest", file: "chat.proto"),
            """
            room_id: "r"
            text {
            }
            client_message_id: "c"

            """)

        let frame = YediRPC.Frame(
            callID: 3, kind: .request, method: "/yedi.echo.Echo/Echo", timeoutMicros: 1_000_000, payload: [0, 255])
        XCTAssertEqual(
            try Protoc.decode(frame.serializedBytes(), as: "yedi.rpc.Frame", file: "rpc.proto"),
            """
            call_id: 3
            kind: FRAME_KIND_REQUEST
            method: "/yedi.echo.Echo/Echo"
            timeout_micros: 1000000
            payload: "\\000\\377"

            """)

        let health = YediHealth.HealthCheckResponse(status: .serving)
        XCTAssertEqual(
            try Protoc.decode(health.serializedBytes(), as: "yedi.health.HealthCheckResponse", file: "health.proto"),
            "status: SERVING_STATUS_SERVING\n")
    }
}
