import ProtoBridge
import RPCCore
import YediProto

/// One method as the probe knows it: protobuf-c's request and response schemas (which describe the
/// messages) joined with the generated descriptor (which alone knows the streaming kind).
struct ProbeMethod {
    let serviceName: String
    let name: String
    let input: MessageSchema
    let output: MessageSchema
    /// `nil` when the generated Swift bindings lack the method: they are out of step with the C code,
    /// so the kind is unknown and the method cannot be called.
    let descriptor: MethodDescriptor?

    /// `yedi.echo.Echo/Echo`, as `call` takes it.
    var fullName: String { "\(serviceName)/\(name)" }

    var kindText: String { descriptor.map { "\($0.kind)" } ?? "unknown kind" }

    /// The `idempotency_level` option's value name, for machine-readable listings.
    var idempotencyOption: String {
        switch descriptor?.idempotency {
        case .idempotent: "IDEMPOTENT"
        case .noSideEffects: "NO_SIDE_EFFECTS"
        case .unknown, nil: "IDEMPOTENCY_UNKNOWN"
        }
    }

    /// `nil` for methods without the option, where nothing can be promised.
    var idempotencyText: String? {
        switch descriptor?.idempotency {
        case .idempotent: "idempotent"
        case .noSideEffects: "no side effects"
        case .unknown, nil: nil
        }
    }
}

struct ProbeService {
    let fullName: String
    let methods: [ProbeMethod]
}

/// Every service, method, message and enum of the build, found by name; misspelt names get the
/// closest known ones as suggestions, because a probe is typed by hand.
struct SchemaCatalog {
    /// Sorted by name, so listings are stable.
    let services: [ProbeService]
    let messages: [MessageSchema]
    let enums: [EnumSchema]

    static let shared = SchemaCatalog(
        schemas: ServiceSchema.all,
        descriptors: RPCCoreCatalog.services + YediProtoCatalog.services,
        messages: MessageSchema.all,
        enums: EnumSchema.all
    )

    init(schemas: [ServiceSchema], descriptors: [ServiceDescriptor], messages: [MessageSchema], enums: [EnumSchema]) {
        let descriptorsByName = Dictionary(
            descriptors.map { ($0.fullName, $0) }, uniquingKeysWith: { first, _ in first })
        services = schemas.sorted { $0.fullName < $1.fullName }.map { schema in
            let descriptor = descriptorsByName[schema.fullName]
            return ProbeService(
                fullName: schema.fullName,
                methods: schema.methods.map { method in
                    ProbeMethod(
                        serviceName: schema.fullName,
                        name: method.name,
                        input: method.input,
                        output: method.output,
                        descriptor: descriptor?.method(named: method.name)
                    )
                }
            )
        }
        self.messages = messages.sorted { $0.fullName < $1.fullName }
        self.enums = enums.sorted { $0.fullName < $1.fullName }
    }

    // MARK: Lookups

    func service(named name: String) -> ProbeService? {
        services.first { $0.fullName == name }
    }

    /// `svc/Method`, `/svc/Method` (the wire path) or `svc.Method`.
    func method(named name: String) -> ProbeMethod? {
        guard let (serviceName, methodName) = Self.split(methodName: name) else { return nil }
        return service(named: serviceName)?.methods.first { $0.name == methodName }
    }

    /// What `describe` can show.
    enum Definition {
        case service(ProbeService)
        case method(ProbeMethod)
        case message(MessageSchema)
        case enumType(EnumSchema)
    }

    func definition(named name: String) -> Definition? {
        if let service = service(named: name) { return .service(service) }
        if let message = messages.first(where: { $0.fullName == name }) { return .message(message) }
        if let enumSchema = enums.first(where: { $0.fullName == name }) { return .enumType(enumSchema) }
        if let method = method(named: name) { return .method(method) }
        return nil
    }

    // MARK: Lookups that explain a miss

    func requireService(_ name: String) throws(ProbeError) -> ProbeService {
        if let service = service(named: name) { return service }
        throw unknown("service", name, candidates: services.map(\.fullName))
    }

    /// A callable method; a service's name alone gets its methods as the suggestion.
    func requireMethod(_ name: String) throws(ProbeError) -> ProbeMethod {
        if let method = method(named: name) { return method }
        if let service = service(named: name) {
            throw ProbeError(
                "\(name) is a service; name one of its methods: "
                    + service.methods.map(\.fullName).joined(separator: ", "),
                exitCode: ExitStatus.unknownName
            )
        }
        let normalized = Self.split(methodName: name).map { "\($0)/\($1)" } ?? name
        if let (serviceName, _) = Self.split(methodName: name), let service = service(named: serviceName) {
            let methods = service.methods.map(\.fullName)
            if Self.closest(to: normalized, among: methods).isEmpty {
                throw ProbeError(
                    "unknown method \"\(name)\"; \(serviceName) has " + methods.joined(separator: ", "),
                    exitCode: ExitStatus.unknownName
                )
            }
            throw unknown("method", name, candidates: methods, comparing: normalized)
        }
        throw unknown(
            "method", name, candidates: services.flatMap { $0.methods.map(\.fullName) }, comparing: normalized)
    }

    func requireDefinition(_ name: String) throws(ProbeError) -> Definition {
        if let definition = definition(named: name) { return definition }
        let candidates =
            services.map(\.fullName) + services.flatMap { $0.methods.map(\.fullName) } + messages.map(\.fullName)
            + enums.map(\.fullName)
        let normalized = Self.split(methodName: name).map { "\($0)/\($1)" } ?? name
        throw unknown("service, method, message or enum", name, candidates: candidates, comparing: normalized)
    }

    private func unknown(_ what: String, _ name: String, candidates: [String], comparing: String? = nil)
        -> ProbeError
    {
        let suggestions = Self.closest(to: comparing ?? name, among: candidates)
        let hint =
            suggestions.isEmpty
            ? "run 'yedi-probe list' to see what there is"
            : "did you mean \(suggestions.joined(separator: " or "))?"
        return ProbeError("unknown \(what) \"\(name)\"; \(hint)", exitCode: ExitStatus.unknownName)
    }

    // MARK: Names

    /// Splits a method name at the `/`, or at the last `.` when there is no `/`.
    static func split(methodName name: String) -> (service: String, method: String)? {
        let trimmed = name.hasPrefix("/") ? String(name.dropFirst()) : name
        let separator = trimmed.firstIndex(of: "/") ?? trimmed.lastIndex(of: ".")
        guard let separator else { return nil }
        let service = String(trimmed[..<separator])
        let method = String(trimmed[trimmed.index(after: separator)...])
        guard !service.isEmpty, !method.isEmpty else { return nil }
        return (service, method)
    }

    /// Up to `limit` candidates a typo away from `name`: first those `name` ends (the package left out),
    /// then those within an edit distance that grows with the length, closest first.
    static func closest(to name: String, among candidates: [String], limit: Int = 3) -> [String] {
        let wanted = name.lowercased()
        guard !wanted.isEmpty else { return [] }
        var scored: [(candidate: String, score: Int)] = []
        for candidate in Set(candidates) {
            let lowered = candidate.lowercased()
            if lowered.hasSuffix("." + wanted) || lowered.hasSuffix("/" + wanted) {
                scored.append((candidate, -1))
                continue
            }
            let distance = editDistance(wanted, lowered)
            if distance <= max(2, wanted.count / 4) { scored.append((candidate, distance)) }
        }
        scored.sort { $0.score != $1.score ? $0.score < $1.score : $0.candidate < $1.candidate }
        return scored.prefix(limit).map(\.candidate)
    }

    /// Levenshtein distance over characters, in two rows of memory.
    static func editDistance(_ lhs: String, _ rhs: String) -> Int {
        let a = Array(lhs)
        let b = Array(rhs)
        guard !a.isEmpty else { return b.count }
        guard !b.isEmpty else { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(substitution, previous[j] + 1, current[j - 1] + 1)
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
