/// A service and its methods, generated from proto/.
public struct ServiceDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// `yedi.account.AccountService`
    public let fullName: String
    public let methods: [MethodDescriptor]

    public init(fullName: String, methods: [MethodDescriptor]) {
        self.fullName = fullName
        self.methods = methods
    }

    public func method(named name: String) -> MethodDescriptor? {
        methods.first { $0.method == name }
    }

    public var description: String { fullName }
}
