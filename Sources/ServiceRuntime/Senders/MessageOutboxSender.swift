import ProtoBridge
import YediProto

/// The outbox destination of one kind of outside message: decodes the job's payload (`MailMessage`,
/// `SmsMessage` or `PushMessage`) and hands it, with the job id, to the registered sender. One generic
/// type rather than one per kind, since they differ only in the message.
struct MessageOutboxSender<Message: ProtoMessage>: OutboxSender {
    let deliver: @Sendable (Message, String) async throws -> Void

    func send(payload: [UInt8], jobID: String) async throws {
        try await deliver(try Message(serializedBytes: payload), jobID)
    }
}

/// Mail jobs to a `MailSender`.
typealias MailOutboxSender = MessageOutboxSender<YediRuntime.MailMessage>
/// SMS jobs to an `SmsSender`.
typealias SmsOutboxSender = MessageOutboxSender<YediRuntime.SmsMessage>
/// Push jobs to a `PushSender`.
typealias PushOutboxSender = MessageOutboxSender<YediRuntime.PushMessage>
