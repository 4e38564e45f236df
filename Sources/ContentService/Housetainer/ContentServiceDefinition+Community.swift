import ServiceRuntime

/// How the ContentService process hosts Housetainer's community (docs/housetainer.md): beside the images
/// its events show, on the content handlers' kit.
extension ContentServiceDefinition {
    static func community(_ env: ServiceEnvironment, content: ContentHandlers) -> CommunityHandlers {
        CommunityHandlers(
            content: content,
            store: communityStore(env),
            authors: CommunityAuthors(directory: content.kit.directory, logger: env.logger))
    }
}
