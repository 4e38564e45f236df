import RPCAccess
import ServiceRuntime

/// ContentService's rows as the store hands them to handlers (no GRDB types).

/// An uploaded image: who uploaded it and which blob holds its bytes.
struct ImageRecord: Sendable, Equatable {
    var id: String
    var ownerID: String
    /// The uploader's app: only callers of that app find it by id (URLs are capabilities of their own).
    var app: AppID = .yedi
    /// The blob's name (lowercase hex SHA-256 of the bytes); several images may share one blob.
    var sha256: String
    var contentType: String
    var width: Int
    var height: Int
    var byteCount: Int
    var createdAtMilliseconds: Int64
    /// The blobs of its resized JPEGs (`ImageVariantSize`); nil for images uploaded before variants existed.
    var variants: ImageVariantNames? = nil

    /// Every blob this image keeps: the original's, then its variants'.
    var blobNames: [String] { [sha256] + (variants.map { [$0.large, $0.thumbnail] } ?? []) }
}

/// The content-addressed names (SHA-256 hex) of an image's variants in `<data>/image-variants/`.
struct ImageVariantNames: Sendable, Equatable {
    var large: String
    var thumbnail: String
}

struct PostRecord: Sendable, Equatable {
    var id: String
    /// The designer's app; every query filters by the caller's.
    var app: AppID = .yedi
    var designerID: String
    var title: String
    var description: String
    var priceKRW: Int64
    /// `yedi.common.HairCategory` raw value.
    var category: Int
    /// In the designer's order; filled when read.
    var photos: [ImageRecord]
    var likeCount: Int64
    var createdAtMilliseconds: Int64
    var updatedAtMilliseconds: Int64
    /// Set by an operator: the post is in no list, and only its designer and operators may open it.
    var hiddenAtMilliseconds: Int64? = nil
    /// Set by an operator: the post is in the FEATURED feed, ordered by this instant.
    var featuredAtMilliseconds: Int64? = nil
}

/// Where a keyset-paginated list stopped: the sort instant (milliseconds) and the id of the last item seen.
typealias ListPosition = PagePosition<Int64>

/// Which posts a feed shows.
struct PostFilter: Sendable, Equatable {
    /// The caller's app: posts of other apps are never listed.
    var app: AppID = .yedi
    /// Only these designers' posts (nil = everyone's; empty = nobody's).
    var designerIDs: [String]?
    /// `yedi.common.HairCategory` raw value; nil = every category.
    var category: Int?
    /// Only featured posts, most recently featured first (the list position's key is the featuring time).
    var featuredOnly = false

    static let everything = PostFilter(designerIDs: nil, category: nil)
}

struct ReviewRecord: Sendable, Equatable {
    var id: String
    /// The reviewer's app; lists filter by the caller's.
    var app: AppID = .yedi
    var reservationID: String
    var designerID: String
    var customerID: String
    var score: Int
    var text: String
    var photos: [ImageRecord]
    /// `yedi.content.ReviewKeyword` raw values, in the order given.
    var keywords: [Int]
    var createdAtMilliseconds: Int64
    /// Set by an operator: left out of the designer's reviews and summary.
    var hiddenAtMilliseconds: Int64? = nil
}

/// A designer's review summary, kept in step with the reviews in the same transaction as every change.
struct ReviewSummaryRecord: Sendable, Equatable {
    var designerID: String
    var reviewCount: Int64
    var scoreTotal: Int64
    /// Keyword raw value → how often it was picked; keywords never picked are absent.
    var keywordCounts: [Int: Int64]

    static func empty(_ designerID: String) -> ReviewSummaryRecord {
        ReviewSummaryRecord(designerID: designerID, reviewCount: 0, scoreTotal: 0, keywordCounts: [:])
    }

    var average: Double { reviewCount == 0 ? 0 : Double(scoreTotal) / Double(reviewCount) }
}

/// What a purge removed that lives outside the database.
struct PurgeOutcome: Sendable, Equatable {
    /// Images the user owned (drop them from the cache).
    var removedImageIDs: [String]
    /// Whether this delivery was seen before (an outbox redelivery).
    var firstDelivery: Bool
}

enum ContentStoreError: Error, Equatable {
    case notFound
    case alreadyReviewed
    /// A photo was removed (an unused upload past its grace period) after the handler checked it.
    case imageGone
}

/// An operator's change to a piece of content of their app.
struct ContentModerationChange: Sendable, Equatable {
    /// `event` and `house` are Housetainer's: hidden or shown by their display flag.
    enum Kind: String, Sendable { case post, review, event, house }
    enum Action: String, Sendable { case hide, show, feature, unfeature }

    var kind: Kind
    var id: String
    var app: AppID
    var action: Action
    var atMilliseconds: Int64
}
