import Synchronization

/// The largest reply one method has produced since the server started, shared by every connection:
/// what a new call of that method sets aside in its connection's memory budget before its handler runs.
///
/// A reply exists only once its handler returns, so budgeting replies as they are produced cannot stop
/// a burst of calls started together from producing them all at once (30 image fetches of 10 MiB, read
/// in one go). Setting aside the size such calls had before keeps that burst within the budget: the
/// calls beyond it wait to start. Zero until the method's first reply (nothing set aside then); it
/// only grows, so a method that once answered large keeps being budgeted as large.
final class ReplySizeEstimate: Sendable {
    private let largest = Atomic<Int>(0)

    /// Bytes to set aside for the next reply.
    var bytes: Int { largest.load(ordering: .relaxed) }

    /// A reply of `bytes` was produced.
    func record(_ bytes: Int) {
        _ = largest.max(bytes, ordering: .relaxed)
    }
}
