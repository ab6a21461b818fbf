// Reads a trace's `symbols` records without reading its events.

extension TraceReader {
    /// The trace's stored symbols (`symbols` records, minor version 3), in file order; empty
    /// when it has none.
    ///
    /// Symbols records start the chunks that hold them and come after every other record
    /// but `end`, so only the chunk headers (8 bytes each) and the chunks that start with a
    /// symbols record are read: the cost does not grow with the events. Each chunk read is
    /// checked (length, CRC-32C, record layout); the rest of the file is not validated here.
    ///
    /// - Throws: ``TraceError`` if the file cannot be read or a chunk holding symbols is damaged.
    public func storedSymbols() throws -> [SymbolsRecord] {
        switch storageForSymbols {
        case .memory(let bytes):
            return try Self.scanSymbols(name: name) { offset, count in
                guard offset < UInt64(bytes.count) else { return [] }
                let start = Int(offset)
                return Array(bytes[start..<min(bytes.count, start + count)])
            }
        case .file(let file):
            return try Self.scanSymbols(name: name) { offset, count in
                var out = [UInt8](repeating: 0, count: count)
                let r = out.withUnsafeMutableBytes { SystemCalls.preadAll(file.fd, $0.baseAddress!, count, offset) }
                if r < 0 {
                    throw TraceError(.io, "cannot read: \(SystemCalls.errorString(Int32(-r)))", offset: offset, file: name)
                }
                out.removeSubrange(r...)
                return out
            }
        }
    }

    private static func scanSymbols(name: String,
                                    _ read: (UInt64, Int) throws -> [UInt8]) throws -> [SymbolsRecord] {
        var out: [SymbolsRecord] = []
        var offset = UInt64(TraceFormat.headerSize)
        while true {
            // The chunk header and the first payload byte (a record tag).
            let head = try read(offset, TraceFormat.chunkHeaderSize + 1)
            guard head.count == TraceFormat.chunkHeaderSize + 1 else { return out }
            let lengthWord = UInt32(head[0]) | UInt32(head[1]) << 8 | UInt32(head[2]) << 16 | UInt32(head[3]) << 24
            // Symbols chunks are never compressed: a compressed chunk holds none.
            let compressed = lengthWord & ChunkCompression.flag != 0
            let length = lengthWord & ~ChunkCompression.flag
            guard length >= 1 && length <= UInt32(TraceFormat.maxChunkPayload) else {
                throw TraceError(.corrupt, "chunk length \(length) is outside 1…\(TraceFormat.maxChunkPayload)",
                                 offset: offset, file: name)
            }
            let payloadOffset = offset + UInt64(TraceFormat.chunkHeaderSize)
            if !compressed && head[TraceFormat.chunkHeaderSize] == RecordTag.symbols {
                let payload = try read(payloadOffset, Int(length))
                guard payload.count == Int(length) else { return out }   // cut short: no more symbols
                let stored = UInt32(head[4]) | UInt32(head[5]) << 8 | UInt32(head[6]) << 16 | UInt32(head[7]) << 24
                try payload.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws in
                    let crc = CRC32C.checksum(raw)
                    guard crc == stored else {
                        throw TraceError(.corrupt, "CRC mismatch in the \(length)-byte chunk", offset: offset, file: name)
                    }
                    var c = ByteCursor(raw, fileOffset: payloadOffset, file: name)
                    while !c.atEnd && c.base[c.position] == RecordTag.symbols {
                        c.skip(1)
                        out.append(try SymbolsRecord.decode(&c))
                    }
                }
            }
            offset = payloadOffset + UInt64(length)
        }
    }
}
