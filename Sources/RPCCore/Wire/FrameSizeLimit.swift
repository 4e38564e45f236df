/// The largest frame a connection's `FrameDecoder` accepts, shared with its connection handler so that a
/// client can adopt the limit the server announces in SETTINGS after the pipeline is built.
///
/// Read and written on the connection's event loop only (the decoder and the handler both run there),
/// hence `@unchecked Sendable`: it is handed to the pipeline from the bootstrap's initializer.
final class FrameSizeLimit: @unchecked Sendable {
    var bytes: Int

    init(_ bytes: Int) { self.bytes = bytes }
}
