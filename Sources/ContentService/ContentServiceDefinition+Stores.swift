import ServiceRuntime

/// The ContentService process's stores on the engine in use (docs/postgres.md): SQLite's with the bytes as
/// files in the data folder by default; PostgreSQL's, bytes included, when `--database` names one, so that
/// every replica reads what another wrote.
extension ContentServiceDefinition {
    /// ContentService's versions on PostgreSQL: the runtime's, content's (with the blob table), then
    /// Housetainer's community, in SQLite's order.
    static let postgresMigrations: [PostgresMigration]? =
        RuntimePostgresSchema.migrations + ContentPostgresSchema.migrations + CommunityPostgresSchema.migrations

    /// Images, posts, likes, reviews, moderation and account deletion.
    static func contentStore(_ env: ServiceEnvironment) -> any ContentStore {
        switch env.engine {
        case .sqlite(let database): SQLiteContentStore(database: database, outbox: env.outbox)
        case .postgres(let postgres): PostgresContentStore(postgres: postgres, outbox: env.outbox)
        }
    }

    /// Where the originals' and the variants' bytes live: two folders beside SQLite; one table on
    /// PostgreSQL (names are content addresses).
    static func blobStores(_ env: ServiceEnvironment) throws -> (
        originals: any ImageBlobStore, variants: any ImageBlobStore
    ) {
        switch env.engine {
        case .sqlite:
            (
                try FileImageBlobStore(folder: try env.dataFolder("images")),
                try FileImageBlobStore(folder: try env.dataFolder("image-variants"))
            )
        case .postgres(let postgres):
            (PostgresImageBlobStore(postgres: postgres), PostgresImageBlobStore(postgres: postgres))
        }
    }

    /// Whether the image caches ask before answering a hit: on PostgreSQL another replica may have deleted
    /// the image, and only its own caches forgot it.
    static func cachesRevalidate(_ env: ServiceEnvironment) -> Bool {
        if case .postgres = env.engine { return true }
        return false
    }

    /// Housetainer's community.
    static func communityStore(_ env: ServiceEnvironment) -> any CommunityStore {
        let push = CommunityPush(outbox: env.outbox)
        return switch env.engine {
        case .sqlite(let database): SQLiteCommunityStore(database: database, push: push)
        case .postgres(let postgres): PostgresCommunityStore(postgres: postgres, push: push)
        }
    }
}
