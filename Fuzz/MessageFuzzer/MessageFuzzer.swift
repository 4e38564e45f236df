import ProtoBridge
import ProtoTestSupport
import RPCCore
import YediProto

#if canImport(Glibc)
    import Glibc
#endif

/// libFuzzer target: the first two bytes pick a message type (`FuzzTypeIndex`) (every type of every proto: YediProto's and
/// RPCCore's catalogs), the rest goes through the bridge's validate + unpack + decode, as a peer's bytes
/// would. A message that decodes must re-encode and decode equal; anything else is a finding (trap).
/// The same bytes also go through `DynamicMessage`, the schema-driven path the probe uses.
let messageTypes: [any ProtoMessage.Type] = RPCCoreCatalog.messageTypes + YediProtoCatalog.messageTypes

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let index = FuzzTypeIndex.pick(data, size, count: messageTypes.count) else { return 0 }
    let type = messageTypes[index]
    let bytes = Array(
        UnsafeBufferPointer(start: data + FuzzTypeIndex.byteCount, count: size - FuzzTypeIndex.byteCount))
    roundTrip(type, bytes)
    roundTripDynamic(type.schema, bytes)
    return 0
}

func roundTrip<M: ProtoMessage>(_: M.Type, _ bytes: [UInt8]) {
    guard let message = try? M(serializedBytes: bytes) else { return }
    let encoded: [UInt8]
    do {
        encoded = try message.serializedBytes()
    } catch {
        fatalError("\(M.schema.fullName): decoded but does not re-encode: \(error)")
    }
    let again: M
    do {
        again = try M(serializedBytes: encoded)
    } catch {
        fatalError("\(M.schema.fullName): re-encoded bytes do not decode: \(error)")
    }
    // NaN != NaN: when the values differ, the wire forms must still agree.
    if again != message, (try? again.serializedBytes()) != encoded {
        fatalError("\(M.schema.fullName): round trip changed the message: \(message) -> \(again)")
    }
}

func roundTripDynamic(_ schema: MessageSchema, _ bytes: [UInt8]) {
    guard let message = try? DynamicMessage(schema: schema, serializedBytes: bytes) else { return }
    let encoded: [UInt8]
    do {
        encoded = try message.serializedBytes()
    } catch {
        fatalError("\(schema.fullName) (dynamic): decoded but does not re-encode: \(error)")
    }
    let again: DynamicMessage
    do {
        again = try DynamicMessage(schema: schema, serializedBytes: encoded)
    } catch {
        fatalError("\(schema.fullName) (dynamic): re-encoded bytes do not decode: \(error)")
    }
    if again != message, (try? again.serializedBytes()) != encoded {
        fatalError("\(schema.fullName) (dynamic): round trip changed the message")
    }
}

/// `YEDI_FUZZ_WRITE_SEEDS=<dir>`: writes the seed corpus into `dir` and exits, instead of fuzzing: for
/// every type, its index bytes before the wire form of SampleMessages' variants (those under 4 KiB) and
/// of the empty message.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    guard let directory = getenv("YEDI_FUZZ_WRITE_SEEDS").map({ String(cString: $0) }) else { return 0 }
    for (index, type) in messageTypes.enumerated() {
        var forms: [[UInt8]] = [[]]
        for sample in SampleMessages.variants(of: type.schema) {
            if let bytes = try? sample.serializedBytes(), bytes.count <= 4096 { forms.append(bytes) }
        }
        for (number, bytes) in forms.enumerated() {
            let path = "\(directory)/\(type.schema.fullName)-\(number)"
            let file = fopen(path, "wb")!
            let seed = FuzzTypeIndex.prefix(index) + bytes
            fwrite(seed, 1, seed.count, file)
            fclose(file)
        }
    }
    exit(0)
}
