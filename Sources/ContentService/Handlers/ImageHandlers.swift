import RPCCore
import ServiceRuntime
import YediProto

extension ContentHandlers {
    func uploadImage(_ request: YediContent.UploadImageRequest, context: ServerContext) async throws
        -> YediCommon.ImageRef
    {
        let image = try await images.upload(
            request.data, claimedType: request.contentType, ownerID: try context.requireUser().id,
            app: context.app, id: ids.next(),
            now: clock.nowMilliseconds,
            quotas: UploadQuotas(perDay: quotas.uploadBytesPerDay, total: quotas.uploadBytesTotal))
        // Not public until a post or review shows it: the uploader's preview is signed.
        return imageRef(image, .signed)
    }

    func getImage(_ request: YediContent.GetImageRequest, context: ServerContext) async throws -> YediContent.ImageData
    {
        let id = try FieldRules.required(request.imageID, field: "image_id")
        // Another app's image does not exist for this caller (its signed URL, if shared, still works).
        guard let image = try await images.image(id: id), image.record.app == context.app else {
            throw RPCError(code: .notFound, message: "image_id: no such image")
        }
        return YediContent.ImageData(
            image: imageRef(image.record, .signed), data: image.bytes, contentType: image.record.contentType)
    }

    /// For ChatService's image messages: the images that exist, in the order asked, with their uploader.
    /// They are pinned: a chat message now shows them, so unreferenced-image collection keeps them.
    func getImageRefs(_ request: YediContent.GetImageRefsRequest, context: ServerContext) async throws
        -> YediContent.GetImageRefsResponse
    {
        let ids = try FieldRule.batch(request.imageIDs, field: "image_ids")
        let images = try await store.images(ids: ids)
        try await store.pinImages(ids: images.map(\.id), now: clock.nowMilliseconds)
        let found = Dictionary(images.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return YediContent.GetImageRefsResponse(
            images: ids.compactMap { id in
                found[id].map { YediContent.OwnedImageRef(image: imageRef($0, .signed), ownerID: $0.ownerID) }
            })
    }

    /// For ChatService's post shares: title and first photo of the posts that exist, in the order asked.
    func getPostPreviews(_ request: YediContent.GetPostPreviewsRequest, context: ServerContext) async throws
        -> YediContent.GetPostPreviewsResponse
    {
        let ids = try FieldRule.batch(request.postIDs, field: "post_ids")
        let found = Dictionary(
            try await store.posts(ids: ids).filter { $0.hiddenAtMilliseconds == nil }.map { ($0.id, $0) },
            uniquingKeysWith: { first, _ in first })
        return YediContent.GetPostPreviewsResponse(
            previews: ids.compactMap { id in
                found[id].map {
                    YediContent.PostPreview(
                        postID: $0.id, designerID: $0.designerID, title: $0.title,
                        firstPhoto: $0.photos.first.map { imageRef($0, .isPublic) })
                }
            })
    }

    /// Account deletion (from AccountService's outbox): everything the user authored or liked goes, the
    /// summaries of the designers they reviewed are recomputed, and blobs no image refers to any more are
    /// deleted after the commit. A redelivery finds nothing left and answers OK.
    func purgeUser(_ request: YediCommon.PurgeUserRequest, context: ServerContext) async throws
        -> YediCommon.PurgeUserResponse
    {
        let userID = try FieldRules.required(request.userID, field: "user_id")
        let outcome = try await store.purgeUser(userID, delivery: Delivery(context), now: clock.nowMilliseconds)
        images.evict(outcome.removedImageIDs)
        directory.forget(userID)
        do {
            _ = try await images.collectGarbage()
        } catch {
            // The blobs stay listed for deletion; the next purge or the next start collects them.
            context.logger.warning("image files not deleted yet", metadata: ["error": "\(error)"])
        }
        context.logPurge(
            of: userID, firstDelivery: outcome.firstDelivery, removed: ["images": outcome.removedImageIDs.count])
        return YediCommon.PurgeUserResponse()
    }
}
