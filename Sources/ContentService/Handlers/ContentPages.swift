import ServiceRuntime

/// ContentService's paginated lists, each with its own cursors (a feed cursor is refused by the likes
/// list) and page sizes.
struct ContentPages: Sendable {
    /// The feed and a designer's posts (the app loads 3 posts per page).
    let posts: PageList
    /// The RECOMMENDED feed: its cursors carry the ranking's snapshot, and no other list takes them.
    let recommended: PageList
    let likes: PageList
    let reviews: PageList

    init(_ kit: HandlerKit) {
        posts = kit.pageList("posts", defaultLimit: 3)
        recommended = kit.pageList("recommended", defaultLimit: 3)
        likes = kit.pageList("likes", defaultLimit: 3)
        reviews = kit.pageList("reviews", defaultLimit: 20)
    }
}
