import LoadGenerator
import ProtoBridge
import ProtoJSON

/// The requests of a load run: the template, checked before any connection is made, and each call's
/// request encoded from it (once for all, when the template has no placeholders).
struct LoadRequests: Sendable {
    /// The status counted for a call whose request could not be made; it is never sent.
    static let unencodable = "REQUEST_NOT_ENCODED"

    let template: RequestTemplate
    let schema: MessageSchema
    /// The request of every call, when they are all the same.
    let constant: [UInt8]?

    /// Parses the template (exit 2 when a placeholder is wrong) and decodes it with every choice of its
    /// random lists (exit 6 or 7, as `call`, when one does not make a valid request).
    init(template text: String, schema: MessageSchema, source: String) throws(ProbeError) {
        do {
            template = try RequestTemplate(text)
        } catch {
            throw .usage("the request (\(source)): \(error.message)")
        }
        self.schema = schema
        var first: [UInt8]?
        for sample in template.samples() {
            let message: DynamicMessage
            do {
                message = try ProtoJSONDecoder().decode(sample, as: schema)
            } catch {
                throw RequestInput.explain(error, source: source, schema: schema)
            }
            do {
                let bytes = try message.serializedBytes()
                if first == nil { first = bytes }
            } catch {
                throw ProbeError("the request cannot be encoded: \(error)", exitCode: ExitStatus.jsonDoesNotFit)
            }
        }
        constant = template.isConstant ? first : nil
    }

    /// The serialized request of call `sequence`; nil if it cannot be made.
    func payload(sequence: UInt64) -> [UInt8]? {
        if let constant { return constant }
        var generator = SystemRandomNumberGenerator()
        let json = template.render(sequence: sequence, using: &generator)
        return try? ProtoJSONDecoder().decode(json, as: schema).serializedBytes()
    }
}
