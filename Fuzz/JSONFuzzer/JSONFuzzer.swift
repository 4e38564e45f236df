import ProtoBridge
import ProtoJSON
import ProtoTestSupport
import RPCCore
import YediProto

#if canImport(Glibc)
    import Glibc
#endif

/// libFuzzer target: the first two bytes pick a message type (`FuzzTypeIndex`) (every type of every proto), the rest is JSON
/// text for ProtoJSON's parser and decoder, as the probe reads it from a file or stdin. A message that
/// decodes must encode (compact and pretty), and the encoder's output must parse back to the same text.
let schemas: [MessageSchema] = (RPCCoreCatalog.messageTypes + YediProtoCatalog.messageTypes).map { $0.schema }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let index = FuzzTypeIndex.pick(data, size, count: schemas.count) else { return 0 }
    let schema = schemas[index]
    let text = Array(
        UnsafeBufferPointer(start: data + FuzzTypeIndex.byteCount, count: size - FuzzTypeIndex.byteCount))
    guard let message = try? ProtoJSONDecoder().decode(utf8: text, as: schema) else { return 0 }
    for style in [ProtoJSONEncoder.Style.compact, .pretty] {
        let encoder = ProtoJSONEncoder(style: style)
        let encoded: [UInt8]
        do {
            encoded = try encoder.encodeUTF8(message)
        } catch {
            fatalError("\(schema.fullName): decoded from JSON but does not encode: \(error)")
        }
        let again: DynamicMessage
        do {
            again = try ProtoJSONDecoder().decode(utf8: encoded, as: schema)
        } catch {
            fatalError("\(schema.fullName): the encoder's output does not parse back: \(error)")
        }
        // NaN != NaN: compare the texts when the values differ.
        if again != message, (try? encoder.encodeUTF8(again)) != encoded {
            fatalError("\(schema.fullName): JSON round trip changed the message")
        }
    }
    return 0
}

/// `YEDI_FUZZ_WRITE_SEEDS=<dir>`: writes the seed corpus into `dir` and exits, instead of fuzzing: for
/// every type, its index bytes before the JSON of SampleMessages' variants (those under 8 KiB) and `{}`.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    guard let directory = getenv("YEDI_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    for (index, schema) in schemas.enumerated() {
        var forms: [[UInt8]] = [Array("{}".utf8)]
        for sample in SampleMessages.variants(of: schema) {
            if let json = try? ProtoJSONEncoder().encodeUTF8(sample), json.count <= 8192 { forms.append(json) }
        }
        for (number, bytes) in forms.enumerated() {
            let path = "\(directory)/\(schema.fullName)-\(number).json"
            let file = fopen(path, "wb")!
            let seed = FuzzTypeIndex.prefix(index) + bytes
            fwrite(seed, 1, seed.count, file)
            fclose(file)
        }
    }
    exit(0)
}
