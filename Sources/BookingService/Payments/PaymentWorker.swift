import ServiceRuntime
import YediProto

/// The outbox destination `payments`: work that must reach the provider after a commit (refunds,
/// reconciliations, webhook events), retried by the outbox until the provider answers.
struct PaymentWorker: OutboxSender {
    let flow: PaymentFlow

    func send(payload: [UInt8], jobID: String) async throws {
        let work = try YediBooking.PaymentWork(serializedBytes: payload)
        switch work.kind {
        case .refund: try await flow.refund(work.refundID)
        case .reconcile: try await flow.reconcile(work.paymentID)
        case .webhookEvent: try await flow.processEvent(work.eventID)
        default: flow.logger.error("payments: unknown work dropped", metadata: ["job": "\(jobID)"])
        }
    }
}
