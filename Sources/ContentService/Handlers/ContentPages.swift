import ServiceRuntime

/// ContentService's paginated lists, each with its own cursors (a feed cursor is refused by the likes
/// list) and page sizes.
struct ContentPages: Sendable {
    /// The feed and a designer's posts (the app loads 3 posts per page).
    let posts: PageList
    let likes: PageList
    let reviews: PageList

    init(_ env: ServiceEnvironment) {
        posts = env.pageList("posts", defaultLimit: 3)
        likes = env.pageList("likes", defaultLimit: 3)
        reviews = env.pageList("reviews", defaultLimit: 20)
    }
}
