import ServiceRuntime

/// AccountService's paginated lists, each with its own cursors and page sizes.
struct AccountPages: Sendable {
    /// Designers by name (the sort key is the name, so cursors carry text).
    let designerSearch: PageList
    /// The designers a customer follows, newest first.
    let following: PageList

    init(_ kit: HandlerKit) {
        designerSearch = kit.pageList("designer-search")
        following = kit.pageList("following")
    }
}
