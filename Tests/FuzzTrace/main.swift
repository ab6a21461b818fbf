// libFuzzer harness for the trace reader. Built by scripts/fuzz-trace together
// with the HeapGenTrace sources (one module, so internals like CRC32C are visible):
//
//   swiftc -parse-as-library -sanitize=fuzzer,address Sources/HeapGenTrace/*.swift Tests/FuzzTrace/main.swift
//
// Each input is read twice: as is, and with every chunk's CRC recomputed, so
// that mutations reach the record decoder instead of stopping at the CRC check.
// The reader must either succeed or throw TraceError; anything else is a bug.

/// Recomputes the CRC of every complete chunk.
func repairingCRCs(_ input: [UInt8]) -> [UInt8] {
    var bytes = input
    var o = TraceFormat.headerSize
    while o + TraceFormat.chunkHeaderSize <= bytes.count {
        // Bit 31 marks a compressed chunk (its CRC covers the stored bytes as well).
        let n = (Int(bytes[o]) | Int(bytes[o + 1]) << 8 | Int(bytes[o + 2]) << 16 | Int(bytes[o + 3]) << 24) & 0x7FFF_FFFF
        guard n >= 1, n <= bytes.count - o - TraceFormat.chunkHeaderSize else { break }
        let start = o + TraceFormat.chunkHeaderSize
        let crc = bytes.withUnsafeBytes { CRC32C.checksum(UnsafeRawBufferPointer(rebasing: $0[start..<(start + n)])) }
        for k in 0..<4 { bytes[o + 4 + k] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(k))) }
        o = start + n
    }
    return bytes
}

func readFully(_ bytes: [UInt8], strict: Bool) {
    do {
        var reader = try TraceReader(bytes: bytes, name: "fuzz", strict: strict)
        var records = 0
        try reader.forEach { _ in records &+= 1 }
        // A valid trace: the summary must not trap either.
        let summary = try TraceSummary(reader: reader)
        if summary.eventCount != summary.end.eventCount {
            fatalError("summary counted \(summary.eventCount) events, end record says \(summary.end.eventCount)")
        }
    } catch is TraceError {
        // Expected for bad input.
    } catch {
        fatalError("reader threw a non-TraceError: \(error)")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTraceInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    // Salvaging (the default) and strict: neither may trap.
    for strict in [false, true] {
        readFully(bytes, strict: strict)
        readFully(repairingCRCs(bytes), strict: strict)
    }
    return 0
}
