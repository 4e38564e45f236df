import RPCAccess
import RPCCore

/// Who may do what, asked the same way by every handler: each returns the typed caller or throws the
/// status a client can act on (`UNAUTHENTICATED`: sign in; `PERMISSION_DENIED`: not yours).
extension ServerContext {
    /// The signed-in user making the call.
    public func requireUser() throws(RPCError) -> AuthenticatedUser {
        guard case .user(let user) = caller else {
            throw RPCError(code: .unauthenticated, message: "sign-in required: send an access token")
        }
        return user
    }

    /// The signed-in user making the call, who must have `role`. The proto's access rule already refused
    /// other roles before the handler ran; asking again here keeps the handler right on its own (a rule
    /// loosened by mistake, a handler reused by another method) and hands it the typed user.
    public func requireRole(_ role: UserRole) throws(RPCError) -> AuthenticatedUser {
        let user = try requireUser()
        guard user.role == role else {
            throw RPCError(code: .permissionDenied, message: "\(method.path) is for \(role) accounts only")
        }
        return user
    }

    /// The signed-in operator of the call's app: a user whose role is among the app's `operator_roles`
    /// (`apps`, the process's app files). The proto's rule admits the operator role names of every app;
    /// this checks the caller's own app's.
    public func requireOperator(of apps: AppCatalog) throws(RPCError) -> AuthenticatedUser {
        let user = try requireUser()
        guard apps[user.app]?.operatorRoles.contains(user.role) == true else {
            throw RPCError(code: .permissionDenied, message: "\(method.path) is for the operators of \(user.app) only")
        }
        return user
    }

    /// The Yedi service making the call (its certificate's name).
    public func requireService() throws(RPCError) -> String {
        guard case .service(let name) = caller else {
            throw RPCError(code: .permissionDenied, message: "\(method.path) is internal: for Yedi services only")
        }
        return name
    }

    /// For an internal method whose request names users: the calling service must be acting for one of
    /// them, proven by that user's token in `yedi-on-behalf-of` (the service's word alone is not enough,
    /// so a compromised or buggy peer cannot read any user's data by naming them). Returns that user.
    @discardableResult
    public func requireActing(forOneOf userIDs: [String], field: String) throws(RPCError) -> AuthenticatedUser {
        guard let user = onBehalfOf else {
            throw RPCError(
                code: .permissionDenied,
                message: "\(field): \(method.path) needs the user's own token in yedi-on-behalf-of")
        }
        guard userIDs.contains(user.id) else {
            throw RPCError(code: .permissionDenied, message: "\(field): not the user this call is made for")
        }
        return user
    }
}
