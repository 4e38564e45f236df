import RPCCore
import ServiceRuntime
import YediProto

extension ContentHandlers {
    /// A review of a past, confirmed reservation of the caller's, checked with BookingService (the owner of
    /// reservations). Fields are checked first (no peer call for a request that is wrong anyway); when
    /// Booking does not answer, the review is refused with UNAVAILABLE (nothing is stored unchecked).
    func createReview(_ request: YediContent.CreateReviewRequest, context: ServerContext) async throws
        -> YediContent.Review
    {
        let customerID = try context.requireRole(.customer).id
        let reservationID = try FieldRules.required(request.reservationID, field: "reservation_id")
        let score = try FieldRules.score(request.score)
        let text = try FieldRules.text(request.text, field: "text", maximum: 2_000)
        let keywords = try FieldRules.keywords(request.keywords)
        let photos = try await ownedImages(
            request.photoIDs, owner: customerID, field: "photo_ids", maximum: 10, context: context)

        let reservation: YediBooking.Reservation?
        do {
            reservation = try await peers.reservation(reservationID)
        } catch {
            context.logger.warning("booking unavailable for a review", metadata: ["error": "\(error)"])
            throw RPCError(code: .unavailable, message: "the reservation cannot be checked now; try again")
        }
        guard let reservation else {
            throw RPCError(code: .notFound, message: "reservation_id: no such reservation")
        }
        guard reservation.customerID == customerID else {
            throw RPCError(code: .permissionDenied, message: "reservation_id: not your reservation")
        }
        guard reservation.status == .confirmed else {
            throw RPCError(code: .failedPrecondition, message: "reservation_id: the reservation was cancelled")
        }
        let now = clock.nowMilliseconds
        guard reservation.startAtMs < now else {
            throw RPCError(
                code: .failedPrecondition, message: "reservation_id: a reservation can be reviewed once it has started")
        }
        let review = ReviewRecord(
            id: ids.next(), app: context.app, reservationID: reservationID, designerID: reservation.designerID,
            customerID: customerID,
            score: score, text: text, photos: photos, keywords: keywords, createdAtMilliseconds: now)
        do {
            try await store.createReview(review, quota: quotas.reviewsPerDay)
        } catch ContentStoreError.alreadyReviewed {
            throw RPCError(code: .alreadyExists, message: "reservation_id: this reservation already has a review")
        } catch ContentStoreError.imageGone {
            throw Self.imageGone
        } catch let exceeded as QuotaExceeded {
            throw exceeded.status
        }
        return self.review(review)
    }

    func listDesignerReviews(
        _ request: YediContent.ListDesignerReviewsRequest, context: ServerContext
    ) async throws -> YediContent.ListDesignerReviewsResponse {
        let designerID = try FieldRules.required(request.designerID, field: "designer_id")
        let page = try pages.reviews.read(request.page, as: Int64.self)
        let reviews = try await store.reviews(
            designerID: designerID, app: context.app, after: page.after, limit: page.limit + 1)
        let summary = try await store.reviewSummaries(designerIDs: [designerID]).first ?? .empty(designerID)
        return YediContent.ListDesignerReviewsResponse(
            reviews: reviews.prefix(page.limit).map(review),
            page: pages.reviews.next(Self.positions(reviews), limit: page.limit),
            averageScore: summary.average, reviewCount: summary.reviewCount,
            keywordCounts: Self.keywordCounts(summary))
    }

    func listMyReviews(_ request: YediContent.ListMyReviewsRequest, context: ServerContext) async throws
        -> YediContent.ListMyReviewsResponse
    {
        let customerID = try context.requireRole(.customer).id
        let page = try pages.reviews.read(request.page, as: Int64.self)
        let reviews = try await store.reviews(
            customerID: customerID, app: context.app, after: page.after, limit: page.limit + 1)
        return YediContent.ListMyReviewsResponse(
            reviews: reviews.prefix(page.limit).map(review),
            page: pages.reviews.next(Self.positions(reviews), limit: page.limit))
    }

    /// For AccountService's designer profiles: average, count and keyword counts, one per id asked.
    func getReviewSummaries(
        _ request: YediContent.GetReviewSummariesRequest, context: ServerContext
    ) async throws -> YediContent.GetReviewSummariesResponse {
        guard request.designerIDs.count <= 100 else { throw FieldRules.invalid("designer_ids", "at most 100 ids") }
        let summaries = try await store.reviewSummaries(designerIDs: request.designerIDs)
        return YediContent.GetReviewSummariesResponse(
            summaries: summaries.map { summary in
                YediContent.DesignerReviewSummary(
                    designerID: summary.designerID, rating: summary.average, reviewCount: summary.reviewCount,
                    keywordCounts: Self.keywordCounts(summary))
            })
    }

    private static func positions(_ reviews: [ReviewRecord]) -> [ListPosition] {
        reviews.map { ListPosition(key: $0.createdAtMilliseconds, id: $0.id) }
    }
}
