import Logging
import RPCCore
import ServiceRuntime
import YediProto

/// Removes uploads nobody used (row and blob) once their grace period is over: the abandoned half of an
/// upload-then-post flow, and uploads made only to fill the disk.
///
/// An image is used when a post or review lists it, when ChatService asked about it for a message
/// (`GetImageRefs` pins it), or when it is its owner's profile image. AccountService keeps profiles and
/// does not tell this service, so before deleting, the owners' current profile image ids are asked of it
/// (`BatchGetUsers`, one call per 100 candidates); when it does not answer, nothing of that batch goes.
struct UnreferencedImageCollector: Sendable {
    let store: any ContentStore
    let images: ImageLibrary
    let users: @Sendable ([String]) async throws -> [YediAccount.PublicUser]
    let clock: any WallClock
    /// Milliseconds an upload may stay unused (`--retention images.unreferenced=HOURS`).
    let grace: Int64
    static let batch = 100

    /// One pass over every image past its grace; answers how many were deleted.
    func collect() async throws -> Int {
        let cutoff = clock.nowMilliseconds - grace
        var removed = 0
        var after: ImageRecord?
        while true {
            let candidates = try await store.unreferencedImages(createdBefore: cutoff, after: after, limit: Self.batch)
            guard let last = candidates.last else { break }
            after = last
            let owners = Array(Set(candidates.map(\.ownerID))).sorted()
            let profileImages = Set(try await users(owners).map(\.profileImageID).filter { !$0.isEmpty })
            let doomed = candidates.map(\.id).filter { !profileImages.contains($0) }
            let deleted = try await store.deleteUnreferencedImages(ids: doomed, createdBefore: cutoff)
            images.evict(deleted)
            removed += deleted.count
            if candidates.count < Self.batch { break }
        }
        if removed > 0 { _ = try await images.collectGarbage() }
        return removed
    }
}
