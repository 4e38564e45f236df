import ServiceRuntime

/// How GetFeed's RECOMMENDED scope ranks posts: by the likes they got in the last 7 days, a recent like
/// weighing more (docs/content.md, "Recommended feed").
///
/// The decay is in steps, so a score is a whole number computed the same way by any engine: a like of
/// the last 24 hours counts 4, of the 48 hours before 2, of the rest of the week 1; older likes count
/// nothing, and a post without a like in the window is not recommended (the app shows the newest feed
/// after the last recommended page). Ties go to the larger post id (newer, as ids grow with time).
struct RecommendationPolicy: Sendable, Equatable {
    struct Step: Sendable, Equatable {
        /// Likes younger than this count `weight` (the first step that fits counts).
        var withinMilliseconds: Int64
        var weight: Int64
    }

    var steps: [Step]

    /// The oldest like that counts.
    var windowMilliseconds: Int64 { steps.map(\.withinMilliseconds).max() ?? 0 }

    static let hour: Int64 = 3_600_000
    static let standard = RecommendationPolicy(steps: [
        Step(withinMilliseconds: 24 * hour, weight: 4),
        Step(withinMilliseconds: 72 * hour, weight: 2),
        Step(withinMilliseconds: 7 * 24 * hour, weight: 1),
    ])
}

/// A recommended page's position: the ranking's snapshot instant (pinned by the first page, so every
/// later page ranks the same likes) and the score of the last post shown; the post id breaks ties.
struct RecommendationKey: PageKey {
    var snapshotAtMilliseconds: Int64
    var score: Int64

    var cursorText: String { "\(snapshotAtMilliseconds):\(score)" }

    init(snapshotAtMilliseconds: Int64, score: Int64) {
        self.snapshotAtMilliseconds = snapshotAtMilliseconds
        self.score = score
    }

    init?(cursorText: String) {
        let parts = cursorText.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let snapshot = Int64(parts[0]), let score = Int64(parts[1]), score >= 0 else {
            return nil
        }
        self.init(snapshotAtMilliseconds: snapshot, score: score)
    }
}
