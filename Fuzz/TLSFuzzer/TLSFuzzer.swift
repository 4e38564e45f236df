import Foundation
import NIOCore
import NIOEmbedded
import RPCTLS

/// libFuzzer target: bytes a peer sends to the server-side `TLSHandler` on an `EmbeddedChannel`, before
/// and during the handshake and on the record path after it. The first byte picks the phase:
/// - 0: the bytes are the client's first flight (the seeds are real ClientHellos);
/// - 1: a real client's ClientHello is delivered first, the bytes then stand for its second flight;
/// - 2: a real handshake completes first, the bytes then arrive as records on the established session.
/// The second byte sets how the bytes are cut into reads (0: one read), at most 16 reads per input: a
/// long input cut into 1-byte reads made thousands of pipeline round trips and took the rate from
/// ~790 to under 350 exec/s per worker as inputs grew, without reaching new code (a TLS record is
/// parsed the same whether it came in 16 reads or 5,000).
///
/// The server uses a throwaway TEST certificate (EC P-256, CN=localhost) made with the openssl CLI into
/// a temporary directory on first use; nothing secret is committed.
let testPKI: (certificate: String, key: String) = {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("yedi-tls-fuzzer-\(ProcessInfo.processInfo.processIdentifier)")
    try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let key = directory.appendingPathComponent("test-only.key").path
    let certificate = directory.appendingPathComponent("test-only.pem").path
    // system(3), not Foundation's Process: its waitUntilExit hangs under the fuzzer's runtime.
    let command =
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout '\(key)' -out "
        + "'\(certificate)' -days 2 -subj /CN=localhost -addext subjectAltName=DNS:localhost 2>/dev/null"
    precondition(system(command) == 0, "openssl could not make the test certificate")
    return (certificate, key)
}()

let serverContext = try! TLSContext(
    configuration: .server(certificateChainFile: testPKI.certificate, privateKeyFile: testPKI.key)
)
let clientContext = try! TLSContext(configuration: .client(trustRootsFile: testPKI.certificate))
let address = try! SocketAddress(ipAddress: "127.0.0.1", port: 443)

/// Phase 1's ClientHello: a real client's, recorded once. A fresh server cannot tell it from a new one
/// (its randomness only matters to the client that sent it, and the bytes after it cannot complete that
/// client's handshake either way), so no client is made per input for phase 1.
let recordedClientHello: ByteBuffer = {
    let client = makeChannel(server: false)
    var hello = ByteBuffer()
    for var buffer in drainOutbound(client) { hello.writeBuffer(&buffer) }
    close(client)
    return hello
}()

func makeChannel(server: Bool) -> EmbeddedChannel {
    let channel = EmbeddedChannel()
    let handler =
        server
        ? try! TLSHandler(serverContext: serverContext)
        : try! TLSHandler(clientContext: clientContext, serverName: "localhost")
    try! channel.pipeline.syncOperations.addHandler(handler)
    channel.connect(to: address, promise: nil)
    return channel
}

func drainOutbound(_ channel: EmbeddedChannel) -> [ByteBuffer] {
    var buffers: [ByteBuffer] = []
    while let buffer = try? channel.readOutbound(as: ByteBuffer.self) { buffers.append(buffer) }
    return buffers
}

func deliver(_ buffers: [ByteBuffer], to channel: EmbeddedChannel) {
    for buffer in buffers { channel.pipeline.fireChannelRead(buffer) }
    channel.pipeline.fireChannelReadComplete()
    channel.embeddedEventLoop.run()
    _ = try? channel.throwIfErrorCaught()
}

/// Carries what the two ends write to each other until both are quiet (a handshake).
func exchange(_ client: EmbeddedChannel, _ server: EmbeddedChannel) {
    for _ in 0..<10 {
        let fromClient = drainOutbound(client)
        let fromServer = drainOutbound(server)
        if fromClient.isEmpty && fromServer.isEmpty { return }
        if !fromClient.isEmpty { deliver(fromClient, to: server) }
        if !fromServer.isEmpty { deliver(fromServer, to: client) }
    }
}

/// Closes and drains. Not `EmbeddedChannel.finish()`: it blocks on the close future, which the TLS
/// handler completes only after the peer's close_notify or the close-notify timeout (a scheduled task
/// that `finish()` never runs), so it would wait forever.
func close(_ channel: EmbeddedChannel) {
    channel.close(promise: nil)
    channel.embeddedEventLoop.advanceTime(by: .seconds(60))
    channel.embeddedEventLoop.run()
    _ = drainOutbound(channel)
    while (try? channel.readInbound(as: ByteBuffer.self)) != nil {}
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let phase = data[0] % 3
    let bytes = UnsafeBufferPointer(start: data + 2, count: size - 2)
    let chunk = data[1] == 0 ? max(bytes.count, 1) : max(Int(data[1]), (bytes.count + 15) / 16)

    let server = makeChannel(server: true)
    var client: EmbeddedChannel?
    if phase == 1 {
        deliver([recordedClientHello], to: server)
        _ = drainOutbound(server)
    } else if phase == 2 {
        let peer = makeChannel(server: false)
        client = peer
        exchange(peer, server)
    }
    var offset = 0
    while offset < bytes.count, server.isActive {
        let end = min(offset + chunk, bytes.count)
        deliver([ByteBuffer(bytes: bytes[offset..<end])], to: server)
        _ = drainOutbound(server)
        while (try? server.readInbound(as: ByteBuffer.self)) != nil {}
        offset = end
    }
    close(server)
    if let client { close(client) }
    return 0
}

/// `YEDI_FUZZ_WRITE_SEEDS=<dir>`: writes the seed corpus (real ClientHellos and a real second flight,
/// each behind its phase bytes) into `dir` and exits, instead of fuzzing.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutableRawPointer, _ argv: UnsafeMutableRawPointer) -> CInt {
    guard let directory = ProcessInfo.processInfo.environment["YEDI_FUZZ_WRITE_SEEDS"] else { return 0 }
    var seeds: [String: [UInt8]] = [:]
    for round in 0..<2 {
        let client = makeChannel(server: false)
        let server = makeChannel(server: true)
        let hello = drainOutbound(client).flatMap { Array($0.readableBytesView) }
        seeds["client-hello-\(round)"] = [0, 0] + hello
        deliver([ByteBuffer(bytes: hello)], to: server)
        deliver(drainOutbound(server), to: client)
        let finished = drainOutbound(client).flatMap { Array($0.readableBytesView) }
        seeds["second-flight-\(round)"] = [1, 0] + finished
        close(client)
        close(server)
    }
    // Phase 2 with an application-data-shaped record and a close_notify-shaped alert.
    seeds["record-appdata"] = [2, 0, 0x17, 0x03, 0x03, 0x00, 0x13] + [UInt8](repeating: 0x41, count: 19)
    seeds["record-alert"] = [2, 0, 0x15, 0x03, 0x03, 0x00, 0x02, 0x01, 0x00]
    for (name, bytes) in seeds {
        _ = FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(bytes))
    }
    exit(0)
}
