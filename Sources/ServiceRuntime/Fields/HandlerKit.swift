/// What every service's handlers take from the environment alike: the injected clock and id source (so
/// tests are deterministic), the per-user quotas, the service's paginated lists and the directory of
/// users' public fields. One value, so that a handler set declares only its own dependencies, and a new
/// app's handlers get the same pieces the same way.
public struct HandlerKit: Sendable {
    public let clock: any WallClock
    public let ids: any IDGenerator
    /// Counted inside the stores' transactions (docs/services.md, "Quotas").
    public let quotas: QuotaLimits
    /// Users' names and profile images next to this service's own data (`UserDirectory`, cached).
    public let directory: UserDirectory
    /// The apps the process serves: their roles, operator roles and catalogues.
    public let apps: AppCatalog
    /// Prefixes every list's name, so no two services' lists accept each other's cursors.
    private let service: String
    private let pageCursorKey: PageCursorKey

    public init(
        clock: any WallClock, ids: any IDGenerator, quotas: QuotaLimits = .defaults, directory: UserDirectory,
        apps: AppCatalog = .yediOnly, service: String, pageCursorKey: PageCursorKey
    ) {
        self.clock = clock
        self.ids = ids
        self.quotas = quotas
        self.directory = directory
        self.apps = apps
        self.service = service
        self.pageCursorKey = pageCursorKey
    }

    /// One of the service's paginated lists, named `<service>.<list>` so no two lists accept each
    /// other's cursors. A list is a name and a key: cheap to make where it is read.
    public func pageList(_ list: String, defaultLimit: Int = 20, maximumLimit: Int = 50) -> PageList {
        PageList(
            "\(service).\(list)", defaultLimit: defaultLimit, maximumLimit: maximumLimit, key: pageCursorKey)
    }
}

/// A handler set built on the kit: `clock`, `ids`, `quotas`, `directory` and `apps` read as its own.
public protocol HandlerKitUser {
    var kit: HandlerKit { get }
}

extension HandlerKitUser {
    public var clock: any WallClock { kit.clock }
    public var ids: any IDGenerator { kit.ids }
    public var quotas: QuotaLimits { kit.quotas }
    public var directory: UserDirectory { kit.directory }
    public var apps: AppCatalog { kit.apps }
}

extension ServiceEnvironment {
    /// The kit of this process's handlers: its clock, ids, configured quotas, lists, and a directory
    /// that asks `lookup` (AccountService's `BatchGetUsers` unless given; AccountService reads its own
    /// store). Make it once per process: the directory forgets users on this environment's events.
    public func makeHandlerKit(directoryLookup: UserDirectory.Lookup? = nil) -> HandlerKit {
        HandlerKit(
            clock: clock, ids: ids, quotas: configuration.quotas,
            directory: UserDirectory(self, lookup: directoryLookup), apps: apps, service: configuration.name,
            pageCursorKey: pageCursorKey)
    }
}
