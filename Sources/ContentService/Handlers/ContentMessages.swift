import YediProto

/// Store records → the messages clients receive.
extension ContentHandlers {
    /// With the URLs of its variants on the image port: public for what a post or review shows, signed
    /// for the rest (`ImageURLs`).
    func imageRef(_ image: ImageRecord, _ access: ImageURLs.Access) -> YediCommon.ImageRef {
        urls.ref(image, access)
    }

    func post(_ post: PostRecord, author: YediContent.PostAuthor?, liked: Bool) -> YediContent.Post {
        YediContent.Post(
            id: post.id, designerID: post.designerID, title: post.title, description: post.description,
            priceKRW: post.priceKRW, category: YediCommon.HairCategory(rawValue: Int32(post.category)),
            photos: post.photos.map { imageRef($0, .isPublic) }, likeCount: post.likeCount, liked: liked,
            createdAtMs: post.createdAtMilliseconds, updatedAtMs: post.updatedAtMilliseconds,
            author: author ?? YediContent.PostAuthor(), hidden: post.hiddenAtMilliseconds != nil,
            featured: post.featuredAtMilliseconds != nil)
    }

    func review(_ review: ReviewRecord) -> YediContent.Review {
        YediContent.Review(
            id: review.id, reservationID: review.reservationID, designerID: review.designerID,
            customerID: review.customerID, score: Int32(review.score), text: review.text,
            photos: review.photos.map { imageRef($0, .isPublic) },
            keywords: review.keywords.map { YediContent.ReviewKeyword(rawValue: Int32($0)) },
            createdAtMs: review.createdAtMilliseconds, hidden: review.hiddenAtMilliseconds != nil)
    }

    /// Most picked first; ties in catalogue order.
    static func keywordCounts(_ summary: ReviewSummaryRecord) -> [YediContent.KeywordCount] {
        summary.keywordCounts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map {
            YediContent.KeywordCount(keyword: YediContent.ReviewKeyword(rawValue: Int32($0.key)), count: $0.value)
        }
    }
}
