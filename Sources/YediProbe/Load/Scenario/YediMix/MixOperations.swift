import LoadGenerator
import ProtoBridge

/// What the mix's operations share: the cast, the methods, and the bookkeeping that keeps repeated
/// likes and reservations valid and matches sends with their deliveries.
struct MixContext: Sendable {
    let cast: YediMix.Cast
    let methods: [String: ProbeMethod]
    let likes: LikeBook
    let desk: ReservationDesk
    let deliveries: DeliveryMatcher<ContinuousClock.Instant>
    /// Nil without `--streams`.
    let streams: LiveStreams?

    /// A call of `method` (`package.Service/Name`) on `service`, tallied under the method's name
    /// unless `name` says otherwise.
    func call(
        _ service: String, _ method: String, _ json: String, token: String, name: String? = nil
    ) -> PlannedCall {
        PlannedCall(name: name ?? method, service: service, method: methods[method]!, json: json, token: token)
    }
}

/// One call the mix is about to make, and what to tell the bookkeeping when it starts and ends.
struct PlannedCall: Sendable {
    /// The report's line: the method, or the method and a variant.
    var name: String
    var service: String
    var method: ProbeMethod
    var json: String
    var token: String
    /// Called just before the call goes out.
    var started: (@Sendable (ContinuousClock.Instant) -> Void)?
    /// Called with the reply, or nil when the call failed.
    var finished: (@Sendable (DynamicMessage?) -> Void)?
}

extension YediMix {
    /// One kind of call of the mix.
    struct Operation: Sendable {
        var name: String
        /// Relative frequency.
        var weight: Int
        /// The call to make now (`sequence` is the run's call number).
        var plan: @Sendable (MixContext, inout SystemRandomNumberGenerator, _ sequence: UInt64) -> PlannedCall
    }

    static let account = "yedi.account.AccountService/"
    static let content = "yedi.content.ContentService/"
    static let booking = "yedi.booking.BookingService/"
    static let chat = "yedi.chat.ChatService/"

    /// Every method the mix may call (some operations pick one of several).
    static let mixMethods = [
        account + "SearchDesigners", account + "GetDesigner", content + "GetFeed", content + "GetPost",
        content + "ListDesignerPosts", content + "Like", content + "Unlike", booking + "ListFreeSlots",
        booking + "GetSchedule", booking + "ListReservations", booking + "CreateReservation",
        booking + "CancelReservation", chat + "SendMessage", chat + "ListMessages", chat + "MarkRead",
    ]

    /// What the mix does, how often (weights add up to 100), and with what. Every call is made as a
    /// signed-in user of the cast: customers browse, like and book; chat calls come from either member
    /// of a customer's room.
    static let operations: [Operation] = [
        Operation(name: "SearchDesigners", weight: 9) { context, random, _ in
            context.call(
                "account", account + "SearchDesigners", #"{"query": "믹스"}"#,
                token: context.cast.customers.randomElement(using: &random)!.token)
        },
        Operation(name: "GetDesigner", weight: 9) { context, random, _ in
            context.call(
                "account", account + "GetDesigner",
                #"{"designerId": "\#(context.cast.designers.randomElement(using: &random)!.id)"}"#,
                token: context.cast.customers.randomElement(using: &random)!.token)
        },
        Operation(name: "GetFeed", weight: 10) { context, random, _ in
            context.call(
                "content", content + "GetFeed", "{}", token: context.cast.customers.randomElement(using: &random)!.token
            )
        },
        Operation(name: "GetFeed following", weight: 4) { context, random, _ in
            context.call(
                "content", content + "GetFeed", #"{"scope": "FEED_SCOPE_FOLLOWING"}"#,
                token: context.cast.customers.randomElement(using: &random)!.token,
                name: content + "GetFeed (following)")
        },
        Operation(name: "GetPost", weight: 10) { context, random, _ in
            context.call(
                "content", content + "GetPost",
                #"{"postId": "\#(context.cast.postIDs.randomElement(using: &random)!)"}"#,
                token: context.cast.customers.randomElement(using: &random)!.token)
        },
        Operation(name: "ListDesignerPosts", weight: 4) { context, random, _ in
            context.call(
                "content", content + "ListDesignerPosts",
                #"{"designerId": "\#(context.cast.designers.randomElement(using: &random)!.id)"}"#,
                token: context.cast.customers.randomElement(using: &random)!.token)
        },
        Operation(name: "Like or Unlike", weight: 6) { context, random, _ in
            let customer = Int.random(in: context.cast.customers.indices, using: &random)
            let post = Int.random(in: context.cast.postIDs.indices, using: &random)
            let like = context.likes.flip(customer: customer, post: post)
            return context.call(
                "content", content + (like ? "Like" : "Unlike"), #"{"postId": "\#(context.cast.postIDs[post])"}"#,
                token: context.cast.customers[customer].token)
        },
        Operation(name: "ListFreeSlots", weight: 12) { context, random, _ in
            let week = context.cast.week
            return context.call(
                "booking", booking + "ListFreeSlots",
                #"{"designerId": "\#(context.cast.designers.randomElement(using: &random)!.id)", "from": \#(week.from), "to": \#(week.to)}"#,
                token: context.cast.customers.randomElement(using: &random)!.token)
        },
        Operation(name: "GetSchedule", weight: 4) { context, random, _ in
            context.call(
                "booking", booking + "GetSchedule",
                #"{"designerId": "\#(context.cast.designers.randomElement(using: &random)!.id)"}"#,
                token: context.cast.customers.randomElement(using: &random)!.token)
        },
        Operation(name: "ListReservations", weight: 3) { context, random, _ in
            listReservations(context, &random)
        },
        Operation(name: "Reserve or cancel", weight: 3) { context, random, _ in
            reserveOrCancel(context, &random)
        },
        Operation(name: "SendMessage", weight: 12) { context, random, sequence in
            sendMessage(context, &random, sequence)
        },
        Operation(name: "ListMessages", weight: 6) { context, random, _ in
            let (room, token) = roomMember(context, &random)
            return context.call("chat", chat + "ListMessages", #"{"roomId": "\#(room)"}"#, token: token)
        },
        Operation(name: "MarkRead", weight: 8) { context, random, _ in
            let (room, token) = roomMember(context, &random)
            return context.call("chat", chat + "MarkRead", #"{"roomId": "\#(room)"}"#, token: token)
        },
    ]

    /// A customer's room and the token of one of its two members.
    private static func roomMember(
        _ context: MixContext, _ random: inout SystemRandomNumberGenerator
    ) -> (room: String, token: String) {
        let customer = context.cast.customers.randomElement(using: &random)!
        let token = Bool.random(using: &random) ? customer.token : context.cast.designer(of: customer).token
        return (customer.roomID, token)
    }

    private static func listReservations(
        _ context: MixContext, _ random: inout SystemRandomNumberGenerator
    ) -> PlannedCall {
        context.call(
            "booking", booking + "ListReservations", #"{"filter": "RESERVATION_FILTER_UPCOMING"}"#,
            token: context.cast.customers.randomElement(using: &random)!.token)
    }

    /// A CreateReservation or CancelReservation that stays within the quotas (`ReservationDesk`), or a
    /// ListReservations when none can be made now.
    private static func reserveOrCancel(
        _ context: MixContext, _ random: inout SystemRandomNumberGenerator
    ) -> PlannedCall {
        let desk = context.desk
        switch desk.next(start: Int.random(in: 0..<max(1, context.cast.customers.count), using: &random)) {
        case .none:
            return listReservations(context, &random)
        case .reserve(let index, let slot, let key):
            let customer = context.cast.customers[index]
            var call = context.call(
                "booking", booking + "CreateReservation",
                #"{"designerId": "\#(context.cast.designer(of: customer).id)", "startAtMs": "\#(slot)", "styleIds": ["\#(context.cast.designer(of: customer).styleID)"], "idempotencyKey": "mix-\#(key)"}"#,
                token: customer.token)
            call.finished = { reply in
                let id = reply.flatMap { try? ReplyPrinter.extract(["id"], from: $0) }
                desk.reserved(customer: index, slot: slot, reservation: id)
            }
            return call
        case .cancel(let index, let reservation, let slot):
            var call = context.call(
                "booking", booking + "CancelReservation", #"{"reservationId": "\#(reservation)"}"#,
                token: context.cast.customers[index].token)
            call.finished = { reply in
                desk.cancelled(customer: index, reservation: reservation, slot: slot, succeeded: reply != nil)
            }
            return call
        }
    }

    /// A text from either member of a customer's room, with a client message id the live streams of
    /// both members match it by.
    private static func sendMessage(
        _ context: MixContext, _ random: inout SystemRandomNumberGenerator, _ sequence: UInt64
    ) -> PlannedCall {
        let customer = context.cast.customers.randomElement(using: &random)!
        let designer = context.cast.designer(of: customer)
        let token = Bool.random(using: &random) ? customer.token : designer.token
        let key = "mix-\(sequence)"
        var call = context.call(
            "chat", chat + "SendMessage",
            #"{"roomId": "\#(customer.roomID)", "text": {"text": "안녕하세요 \#(sequence)"}, "clientMessageId": "\#(key)"}"#,
            token: token)
        if let streams = context.streams {
            let deliveries = context.deliveries
            call.started = { start in
                deliveries.expect(
                    key, from: start, receivers: streams.openCount(customer.id) + streams.openCount(designer.id))
            }
            call.finished = { reply in
                if reply == nil { deliveries.withdraw(key) }
            }
        }
        return call
    }
}

/// The operations of the mix and their weights.
struct Mix: Sendable {
    var operations: [YediMix.Operation]

    /// The operation of a call: picked at random by weight.
    func pick(using random: inout SystemRandomNumberGenerator) -> YediMix.Operation {
        let total = operations.reduce(0) { $0 + $1.weight }
        var ticket = Int.random(in: 0..<total, using: &random)
        for operation in operations {
            if ticket < operation.weight { return operation }
            ticket -= operation.weight
        }
        return operations[operations.count - 1]
    }
}
