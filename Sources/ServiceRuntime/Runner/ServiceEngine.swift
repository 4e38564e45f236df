/// The database a process keeps its data in (`--database`, docs/postgres.md): its own SQLite file, or the
/// PostgreSQL database its service's replicas share. Each definition builds its stores for the engine in
/// use; the runner builds the outbox, scheduler and revocation pieces the same way.
public enum ServiceEngine: Sendable {
    case sqlite(ServiceDatabase)
    case postgres(ServicePostgres)
}
