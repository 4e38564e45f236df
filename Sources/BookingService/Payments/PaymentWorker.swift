import Logging
import ServiceRuntime
import YediProto

/// The outbox destination `payments`: work that must reach the provider after a commit (refunds,
/// reconciliations, webhook events), retried by the outbox until the provider answers.
///
/// The destination's jobs are delivered in order, so a job that can never succeed must not be retried for
/// ever: it would hold every refund behind it. A payload that does not decode, work of an unknown kind and
/// a refund the provider refuses for good (already refunded in its console, not refundable) are logged at
/// error level and dropped (`UndeliverableMessage`); the refund stays `requested`, and the operators'
/// ledger check shows the disagreement with the provider.
struct PaymentWorker: OutboxSender {
    let flow: PaymentFlow

    func send(payload: [UInt8], jobID: String) async throws {
        let work: YediBooking.PaymentWork
        do {
            work = try YediBooking.PaymentWork(serializedBytes: payload)
        } catch {
            throw dropped(jobID, code: "UNREADABLE_WORK", "payments: unreadable work dropped")
        }
        switch work.kind {
        case .refund:
            do {
                try await flow.refund(work.refundID)
            } catch PaymentProviderError.declined(let code, let message) {
                flow.logger.error(
                    "payments: the provider refuses the refund for good; an operator must settle it",
                    metadata: ["refund": "\(work.refundID)", "code": "\(code)", "message": "\(message)"])
                throw UndeliverableMessage(reason: .rejected, provider: flow.provider.name, status: 0, code: code)
            }
        case .reconcile: try await flow.reconcile(work.paymentID)
        case .webhookEvent: try await flow.processEvent(work.eventID)
        default: throw dropped(jobID, code: "UNKNOWN_WORK", "payments: unknown work dropped")
        }
    }

    private func dropped(_ jobID: String, code: String, _ message: Logger.Message) -> UndeliverableMessage {
        flow.logger.error(message, metadata: ["job": "\(jobID)"])
        return UndeliverableMessage(reason: .rejected, provider: flow.provider.name, status: 0, code: code)
    }
}
