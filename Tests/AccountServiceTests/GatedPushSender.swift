import ServiceRuntime
import Synchronization
import YediProto

/// A push sender that fails while closed, so the outbox keeps its jobs pending (retrying), and passes
/// them to `next` once opened: how a test holds a push in the outbox across another call.
final class GatedPushSender: PushSender {
    private let next: any PushSender
    private let isOpen = Atomic<Bool>(false)

    init(next: any PushSender) { self.next = next }

    func open() { isOpen.store(true, ordering: .sequentiallyConsistent) }

    func send(_ push: YediRuntime.PushMessage, jobID: String) async throws {
        guard isOpen.load(ordering: .sequentiallyConsistent) else { throw Closed() }
        try await next.send(push, jobID: jobID)
    }

    struct Closed: Error {}
}
