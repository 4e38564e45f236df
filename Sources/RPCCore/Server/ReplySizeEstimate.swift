import Synchronization

/// The largest reply one method has produced since the server started, shared by every connection:
/// what a new call of that method sets aside in its connection's memory budget before its handler runs.
///
/// A reply exists only once its handler returns, so budgeting replies as they are produced cannot stop
/// a burst of calls started together from producing them all at once (30 image fetches of 10 MiB, read
/// in one go). Setting aside the size such calls had before keeps that burst within the budget: the
/// calls beyond it wait to start. Until the method's first reply, a call sets aside the largest reply
/// the connection may send (`cold`), so a burst right after a start is bounded too; after it, the
/// largest reply so far, which only grows: a method that once answered large stays budgeted as large.
@usableFromInline
final class ReplySizeEstimate: Sendable {
    private let largest = Atomic<Int>(0)
    private let answered = Atomic<Bool>(false)

    /// Bytes to set aside for the next reply: `cold` until the method has answered once.
    func bytes(cold: Int) -> Int {
        answered.load(ordering: .acquiring) ? largest.load(ordering: .relaxed) : cold
    }

    /// A reply of `bytes` was produced.
    func record(_ bytes: Int) {
        _ = largest.max(bytes, ordering: .relaxed)
        answered.store(true, ordering: .releasing)
    }
}
