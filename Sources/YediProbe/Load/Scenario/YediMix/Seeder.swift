import Foundation
import NIOConcurrencyHelpers
import ProtoBridge
import RPCCore

/// Makes the scenario's data set through the public RPCs before the run: designers with hours, a menu
/// and posts (with photos); customers who follow a designer, booked one of their slots and opened a chat
/// room with them.
struct Seeder: Sendable {
    typealias Cast = YediMix.Cast

    var designers: Int
    var customers: Int
    var postsPerDesigner: Int
    var mailbox: SentMessageFolder
    var methods: [String: ProbeMethod]
    /// Whether the sign-up rate limit was already explained.
    let warned = NIOLockedValueBox(false)

    static let account = YediMix.account
    static let content = YediMix.content
    static let booking = YediMix.booking
    static let chat = YediMix.chat

    /// Every method seeding calls.
    static let methods = [
        account + "SignUp", account + "CompleteSignUp", account + "Follow", content + "UploadImage",
        content + "CreatePost", booking + "UpdateSchedule", booking + "GetMenu", booking + "ListFreeSlots",
        booking + "CreateReservation", chat + "OpenRoom",
    ]

    /// The cast, and the free slots per designer (from tomorrow on) that the mix may book.
    struct Seeded: Sendable {
        var cast: Cast
        var slots: [[Int64]]
    }

    /// Signs the designers up (hours, menu, posts), then the customers (room, follow, reservation), a few
    /// at a time: each sign-up hashes a password.
    func seed(_ clients: ServiceClients) async throws -> Seeded {
        let run = String(UInt32.random(in: 0...UInt32.max), radix: 36)
        Output.errorLine(
            "yedi-mix: signing up \(designers) designers and \(customers) customers (run \(run))")
        let signedDesigners = try await inBatches(0..<designers) { index in
            try await seedDesigner(index, run: run, clients)
        }
        let claims = NIOLockedValueBox<Set<String>>([])
        let signedCustomers = try await inBatches(0..<customers) { index in
            try await seedCustomer(index, run: run, designers: signedDesigners, claims: claims, clients)
        }
        var slots: [[Int64]] = []
        for designer in signedDesigners {
            // What is still free after the customers booked, for the mix's reservations.
            slots.append(Array(try await freeSlots(of: designer.id, token: designer.token, clients).prefix(200)))
        }
        let cast = Cast(
            designers: signedDesigners, customers: signedCustomers,
            postIDs: signedDesigners.flatMap(\.postIDs), week: YediMix.Dates.week())
        return Seeded(cast: cast, slots: slots)
    }

    private func seedDesigner(_ index: Int, run: String, _ clients: ServiceClients) async throws -> Cast.Designer {
        let user = try await signUp(
            clients, email: "mix-\(run)-d\(index)@example.com",
            json: #"""
                {"email": "mix-\#(run)-d\#(index)@example.com", "password": "scissors99", "name": "믹스 디자이너 \#(index)",
                 "phone": "\#(Self.phone(index))", "gender": "GENDER_MALE", "birthDate": {"year": 1988, "month": 11, "day": 3},
                 "role": "ROLE_DESIGNER",
                 "designer": {"description": "부하 시험", "skills": ["펌"], "rank": "DESIGNER_RANK_PRINCIPAL",
                   "shop": {"name": "믹스 살롱 \#(index)", "phone": "0255551234",
                     "address": {"city": "서울", "district": "강남구 테헤란로", "detail": "\#(index)층"},
                     "latitude": 37.5, "longitude": 127.03}}}
                """#)
        // The designer's own call sets the schedule up even before AccountService's outbox does.
        _ = try await seedCall(
            clients, "booking", Self.booking + "UpdateSchedule",
            #"""
            {"schedule": {"openingMinute": 600, "closingMinute": 1200, "timeZone": "Asia/Seoul", "slotMinutes": 30,
              "breaks": [{"startMinute": 780, "endMinute": 840}]}}
            """#, token: user.token)
        let menu = try await seedCall(
            clients, "booking", Self.booking + "GetMenu", #"{"designerId": "\#(user.id)"}"#, token: user.token)
        let styleID = try field(["styles", "0", "id"], of: menu)
        var postIDs: [String] = []
        for post in 0..<postsPerDesigner {
            let png = TinyPNG.make(seed: UInt8(truncatingIfNeeded: index * 31 + post))
            let image = try await seedCall(
                clients, "content", Self.content + "UploadImage",
                #"{"data": "\#(Data(png).base64EncodedString())", "contentType": "image/png"}"#, token: user.token)
            let imageID = try field(["id"], of: image)
            let created = try await seedCall(
                clients, "content", Self.content + "CreatePost",
                #"""
                {"title": "믹스 스타일 \#(post + 1)", "description": "부하 시험 게시물", "priceKrw": "\#(30_000 + 5_000 * post)",
                 "category": "\#(Self.categories[post % Self.categories.count])",
                 "photoIds": ["\#(imageID)"]}
                """#, token: user.token)
            postIDs.append(try field(["id"], of: created))
        }
        return Cast.Designer(id: user.id, token: user.token, postIDs: postIDs, styleID: styleID)
    }

    private static let categories = [
        "HAIR_CATEGORY_CUT", "HAIR_CATEGORY_PERM", "HAIR_CATEGORY_COLOR", "HAIR_CATEGORY_OTHER",
    ]

    private func seedCustomer(
        _ index: Int, run: String, designers: [Cast.Designer], claims: NIOLockedValueBox<Set<String>>,
        _ clients: ServiceClients
    ) async throws -> Cast.Customer {
        let user = try await signUp(
            clients, email: "mix-\(run)-c\(index)@example.com",
            json: #"""
                {"email": "mix-\#(run)-c\#(index)@example.com", "password": "hair2024!", "name": "믹스 고객 \#(index)",
                 "phone": "\#(Self.phone(index + 500))", "gender": "GENDER_FEMALE",
                 "birthDate": {"year": 1995, "month": 4, "day": 12}, "role": "ROLE_CUSTOMER"}
                """#)
        let designerIndex = index % designers.count
        let designer = designers[designerIndex]
        let room = try await seedCall(
            clients, "chat", Self.chat + "OpenRoom", #"{"designerId": "\#(designer.id)"}"#, token: user.token)
        _ = try await seedCall(
            clients, "account", Self.account + "Follow", #"{"designerId": "\#(designer.id)"}"#, token: user.token)
        // A free slot no other customer of this run claimed: concurrent customers never race for one.
        let free = try await freeSlots(of: designer.id, token: user.token, clients)
        guard
            let slot = claims.withLockedValue({ claims in
                free.first { claims.insert("\(designer.id)/\($0)").inserted }
            })
        else {
            throw ProbeError.usage(
                "yedi-mix could not seed: no free slot left for customer \(index) at designer \(designerIndex) "
                    + "over the next 30 days: give more --designers")
        }
        _ = try await seedCall(
            clients, "booking", Self.booking + "CreateReservation",
            #"{"designerId": "\#(designer.id)", "startAtMs": "\#(slot)", "styleIds": ["\#(designer.styleID)"], "idempotencyKey": "seed"}"#,
            token: user.token)
        return Cast.Customer(
            id: user.id, token: user.token, roomID: try field(["room", "id"], of: room), designer: designerIndex)
    }

    /// The designer's free slot starts from tomorrow to 30 days on, soonest first.
    private func freeSlots(of designer: String, token: String, _ clients: ServiceClients) async throws -> [Int64] {
        let range = YediMix.Dates.bookingRange()
        let reply = try await seedCall(
            clients, "booking", Self.booking + "ListFreeSlots",
            #"{"designerId": "\#(designer)", "from": \#(range.from), "to": \#(range.to)}"#, token: token)
        let days = (try jsonObject(of: reply)["days"] as? [[String: Any]]) ?? []
        return days.flatMap { day in
            ((day["freeStartAtMs"] as? [Any]) ?? []).compactMap { value in
                (value as? String).flatMap { Int64($0) } ?? (value as? NSNumber)?.int64Value
            }
        }
    }

    /// SignUp, the code from the mailbox, CompleteSignUp.
    private func signUp(_ clients: ServiceClients, email: String, json: String) async throws -> (
        id: String, token: String
    ) {
        let started = try await seedCall(clients, "account", Self.account + "SignUp", json, token: nil)
        let verificationID = try field(["verificationId"], of: started)
        let mail = try await mailbox.waitForMessages(to: email, verificationId: verificationID, wait: .seconds(30))
        guard let code = mail.last?.values?["code"] else {
            throw ProbeError(
                "yedi-mix: no sign-up code for \(email) in \(mailbox.folder.path) (pass --sent-mail: "
                    + "AccountService's data folder/sent-mail; it must run with its development mail sender)",
                exitCode: ExitStatus.noSuchField)
        }
        let completed = try await seedCall(
            clients, "account", Self.account + "CompleteSignUp",
            #"{"verificationId": "\#(verificationID)", "code": "\#(code)"}"#, token: nil)
        return (try field(["user", "id"], of: completed), try field(["session", "accessToken"], of: completed))
    }
}
