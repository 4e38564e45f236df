import RPCCore
import ServiceRuntime
import YediProto

/// What ContentService asks its peers, as closures so tests can count or replace the calls.
struct ContentPeers: Sendable {
    /// Public profiles (name, profile image) of `ids` from AccountService's `BatchGetUsers`, one call: the
    /// lookup of the service's `UserDirectory` (post authors) and of the image collector.
    var users: UserDirectory.Lookup
    /// The designers `userID` follows (AccountService's `ListFollowedDesignerIds`).
    var followedDesignerIDs: @Sendable (String) async throws -> [String]
    /// BookingService's `GetReservation`; nil when Booking says there is no such reservation.
    var reservation: @Sendable (String) async throws -> YediBooking.Reservation?

    static func live(_ peers: ServicePeers) -> ContentPeers {
        let timeout = CallOptions(timeout: .seconds(2))
        return ContentPeers(
            users: UserDirectory.batchGetUsers(peers),
            followedDesignerIDs: { userID in
                let account = YediAccount.AccountService.Client(try peers.client(for: "account"))
                return try await account.listFollowedDesignerIDs(.init(userID: userID), options: timeout).designerIDs
            },
            reservation: { id in
                let booking = YediBooking.BookingService.Client(try peers.client(for: "booking"))
                do {
                    return try await booking.getReservation(.init(reservationID: id), options: timeout)
                } catch let error as RPCError where error.code == .notFound {
                    return nil
                }
            })
    }
}
