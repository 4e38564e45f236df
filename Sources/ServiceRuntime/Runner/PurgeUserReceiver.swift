import RPCCore
import YediProto

/// The receiving end of account deletion for a service that keeps no per-user data yet: it records the
/// delivery in the receipt ledger (so redeliveries are recognised) and answers OK.
///
/// Each service replaces it with a real purge when its issue gives it user data.
public enum PurgeUserReceiver {
    public static func methods(
        of service: ServiceDescriptor,
        method: RPCMethod<YediCommon.PurgeUserRequest, YediCommon.PurgeUserResponse>,
        environment env: ServiceEnvironment
    ) -> RPCMethodSet {
        RPCMethodSet(service) { router in
            router.register(
                method,
                unary: { request, context in
                    guard !request.userID.isEmpty else {
                        throw RPCError(code: .invalidArgument, message: "user_id is required")
                    }
                    let now = env.clock.nowMilliseconds
                    let first = try await env.database.write { db in
                        try ReceiptLedger.isFirstDelivery(in: db, context: context, nowMilliseconds: now)
                    }
                    context.logger.info(
                        "purge user: no user data kept here yet",
                        metadata: ["user": "\(request.userID)", "first-delivery": "\(first)"])
                    return YediCommon.PurgeUserResponse()
                })
        }
    }
}
