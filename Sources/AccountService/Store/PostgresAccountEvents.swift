import PostgresNIO
import RPCCore
import ServiceRuntime
import YediProto

/// `AccountEvents` inside a PostgreSQL transaction: the same jobs to the same peers (its `purgedPeers`
/// and `directoryPeers` say who), written by the change's own transaction.
struct PostgresAccountEvents: Sendable {
    let outbox: Outbox

    /// A new designer is set up at BookingService.
    func accountCreated(_ user: UserRecord, designer: DesignerRecord?, in tx: PostgresTransaction) async throws {
        guard let designer else { return }
        try await enqueue(
            peer: "booking", method: YediBooking.BookingService.Method.setUpDesigner,
            request: YediBooking.SetUpDesignerRequest(
                designerID: user.id, openingHour: Int32(designer.shop.openingHour),
                closingHour: Int32(designer.shop.closingHour), timeZone: designer.shop.timeZone),
            in: tx)
    }

    /// A user's name, profile image or shop card changed: the cached copies elsewhere are dropped.
    func publicFieldsChanged(userID: String, in tx: PostgresTransaction) async throws {
        for peer in AccountEvents.directoryPeers {
            try await enqueue(
                peer: peer, method: YediRuntime.Users.Method.userChanged, request: .init(userID: userID), in: tx)
        }
    }

    /// An account was deleted: every peer revokes the user, then purges their data (per peer, in order).
    func accountDeleted(_ revocation: YediRuntime.RevokeUserRequest, in tx: PostgresTransaction) async throws {
        for (peer, method) in AccountEvents.purgedPeers {
            try await enqueue(
                peer: peer, method: YediRuntime.Revocations.Method.revokeUser, request: revocation, in: tx)
            try await enqueue(peer: peer, method: method, request: .init(userID: revocation.userID), in: tx)
        }
    }

    /// A new password: every peer refuses the tokens issued so far.
    func tokensRevoked(_ revocation: YediRuntime.RevokeUserRequest, in tx: PostgresTransaction) async throws {
        for (peer, _) in AccountEvents.purgedPeers {
            try await enqueue(
                peer: peer, method: YediRuntime.Revocations.Method.revokeUser, request: revocation, in: tx)
        }
    }

    func mail(_ mail: YediRuntime.MailMessage, in tx: PostgresTransaction) async throws {
        try await outbox.enqueue(in: tx, mail: mail)
    }

    func sms(_ sms: YediRuntime.SmsMessage, in tx: PostgresTransaction) async throws {
        try await outbox.enqueue(in: tx, sms: sms)
    }

    private func enqueue<Request, Response>(
        peer: String, method: RPCMethod<Request, Response>, request: Request, in tx: PostgresTransaction
    ) async throws {
        try await outbox.enqueue(in: tx, peer: peer, method: method, request: request)
    }
}
