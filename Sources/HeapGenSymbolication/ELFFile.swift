#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The little an ELF file has to tell before we trust it for symbolization: its GNU build ID
/// and its PT_LOAD segments. Reads the ELF header, the program headers (PT_NOTE, PT_LOAD) and,
/// when no PT_NOTE carries a build ID (some separate debug files), the SHT_NOTE sections.
/// ELF32/ELF64, either byte order. Reads at most a few MiB of a file.
struct ELFFile: Sendable, Equatable {
    struct LoadSegment: Sendable, Equatable {
        var vaddr: UInt64
        var memsz: UInt64
        var flags: UInt32
        /// Where its first `filesz` bytes are in the file.
        var offset: UInt64 = 0
        var filesz: UInt64 = 0
        func contains(_ address: UInt64) -> Bool {
            address >= vaddr && address - vaddr < memsz
        }
    }

    enum Failure: Error, Equatable {
        case cannotOpen(errno: Int32)
        case notELF
        case malformed(String)
    }

    var buildID: [UInt8]?
    var loads: [LoadSegment]

    /// Does one of the PT_LOAD segments cover `vaddr`? True for a file without PT_LOADs
    /// (nothing to check against).
    func covers(_ vaddr: UInt64) -> Bool {
        loads.isEmpty || loads.contains { $0.contains(vaddr) }
    }

    static let ptLoad: UInt32 = 1
    static let ptNote: UInt32 = 4
    static let shtNote: UInt32 = 7
    static let ntGNUBuildID: UInt32 = 3
    static let maxNoteBytes = 1 << 20
    static let maxHeaderTable = 4 << 20

    /// `count` bytes of the file's image at each of `vaddrs` (from a PT_LOAD segment's file
    /// part), nil where there are none: code look-ups for the addresses no symbol names. One
    /// parse and one open for them all (a stripped library has thousands: a report on a Ruby
    /// trace opened libruby 6,775 times, once per address).
    static func bytes(path: String, vaddrs: [UInt64], count: Int) -> [[UInt8]?] {
        guard case .success(let elf) = read(path: path) else { return vaddrs.map { _ in nil } }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return vaddrs.map { _ in nil } }
        defer { close(fd) }
        let reader = Reader(fd: fd)
        return vaddrs.map { vaddr in
            guard let seg = elf.loads.first(where: { vaddr >= $0.vaddr && vaddr - $0.vaddr < $0.filesz }),
                  vaddr - seg.vaddr + UInt64(count) <= seg.filesz else { return nil }
            return try? reader.bytes(at: seg.offset + (vaddr - seg.vaddr), count: count)
        }
    }

    static func read(path: String) -> Result<ELFFile, Failure> {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { return .failure(.cannotOpen(errno: errno)) }
        defer { close(fd) }
        let reader = Reader(fd: fd)
        do {
            return .success(try parse(reader))
        } catch let f as Failure {
            return .failure(f)
        } catch {
            return .failure(.malformed("\(error)"))
        }
    }

    private struct Reader {
        let fd: Int32
        func bytes(at offset: UInt64, count: Int) throws -> [UInt8] {
            guard count >= 0, count <= ELFFile.maxHeaderTable else { throw Failure.malformed("table too large") }
            var out = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                guard let pos = off_t(exactly: offset &+ UInt64(done)), offset <= UInt64(Int64.max) else {
                    throw Failure.malformed("offset out of range")
                }
                let r = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, count - done, pos) }
                if r < 0 {
                    if errno == EINTR { continue }
                    throw Failure.malformed("read failed (errno \(errno))")
                }
                if r == 0 { throw Failure.malformed("truncated") }
                done += r
            }
            return out
        }
    }

    /// Field decoding for one byte order.
    private struct Fields {
        let bigEndian: Bool
        let is64: Bool
        func u16(_ b: [UInt8], _ o: Int) -> UInt16 {
            bigEndian ? UInt16(b[o]) << 8 | UInt16(b[o + 1]) : UInt16(b[o + 1]) << 8 | UInt16(b[o])
        }
        func u32(_ b: [UInt8], _ o: Int) -> UInt32 {
            var v: UInt32 = 0
            for i in 0..<4 { v |= UInt32(b[o + i]) << (bigEndian ? UInt32(24 - 8 * i) : UInt32(8 * i)) }
            return v
        }
        func u64(_ b: [UInt8], _ o: Int) -> UInt64 {
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(b[o + i]) << (bigEndian ? UInt64(56 - 8 * i) : UInt64(8 * i)) }
            return v
        }
        /// A word: 8 bytes in ELF64, 4 in ELF32.
        func word(_ b: [UInt8], _ o: Int) -> UInt64 { is64 ? u64(b, o) : UInt64(u32(b, o)) }
    }

    private static func parse(_ r: Reader) throws -> ELFFile {
        let ident: [UInt8]
        do { ident = try r.bytes(at: 0, count: 16) } catch { throw Failure.notELF }
        guard ident[0] == 0x7F, ident[1] == 0x45, ident[2] == 0x4C, ident[3] == 0x46 else { throw Failure.notELF }
        guard ident[4] == 1 || ident[4] == 2, ident[5] == 1 || ident[5] == 2 else { throw Failure.malformed("bad class or data") }
        let f = Fields(bigEndian: ident[5] == 2, is64: ident[4] == 2)
        let eh = try r.bytes(at: 0, count: f.is64 ? 64 : 52)
        let phoff = f.is64 ? f.u64(eh, 32) : UInt64(f.u32(eh, 28))
        let shoff = f.is64 ? f.u64(eh, 40) : UInt64(f.u32(eh, 32))
        let phentsize = Int(f.u16(eh, f.is64 ? 54 : 42))
        var phnum = Int(f.u16(eh, f.is64 ? 56 : 44))
        let shentsize = Int(f.u16(eh, f.is64 ? 58 : 46))
        var shnum = Int(f.u16(eh, f.is64 ? 60 : 48))

        let minPh = f.is64 ? 56 : 32
        let minSh = f.is64 ? 64 : 40
        // Extended numbering: counts too large for e_phnum / e_shnum live in section 0.
        if (phnum == 0xFFFF || shnum == 0) && shoff != 0 && shentsize >= minSh {
            let s0 = try r.bytes(at: shoff, count: shentsize)
            if shnum == 0 { shnum = Int(clamping: f.word(s0, f.is64 ? 32 : 20)) }
            if phnum == 0xFFFF { phnum = Int(f.u32(s0, f.is64 ? 44 : 28)) }
        }

        var loads: [LoadSegment] = []
        var buildID: [UInt8]?
        if phoff != 0, phnum > 0 {
            guard phentsize >= minPh else { throw Failure.malformed("program header size") }
            let table = try r.bytes(at: phoff, count: phnum * phentsize)
            for i in 0..<phnum {
                let o = i * phentsize
                let type = f.u32(table, o)
                let offset, vaddr, filesz, memsz, align: UInt64
                let flags: UInt32
                if f.is64 {
                    flags = f.u32(table, o + 4)
                    offset = f.u64(table, o + 8); vaddr = f.u64(table, o + 16)
                    filesz = f.u64(table, o + 32); memsz = f.u64(table, o + 40); align = f.u64(table, o + 48)
                } else {
                    offset = UInt64(f.u32(table, o + 4)); vaddr = UInt64(f.u32(table, o + 8))
                    filesz = UInt64(f.u32(table, o + 16)); memsz = UInt64(f.u32(table, o + 20))
                    flags = f.u32(table, o + 24); align = UInt64(f.u32(table, o + 28))
                }
                if type == ptLoad {
                    loads.append(LoadSegment(vaddr: vaddr, memsz: memsz, flags: flags, offset: offset, filesz: filesz))
                } else if type == ptNote, buildID == nil, filesz > 0, filesz <= UInt64(maxNoteBytes) {
                    if let notes = try? r.bytes(at: offset, count: Int(filesz)) {
                        buildID = findBuildID(notes, f, align: align)
                    }
                }
            }
        }
        if buildID == nil, shoff != 0, shnum > 0, shnum <= 65_536 {
            guard shentsize >= minSh else { throw Failure.malformed("section header size") }
            let table = try r.bytes(at: shoff, count: shnum * shentsize)
            for i in 0..<shnum where buildID == nil {
                let o = i * shentsize
                guard f.u32(table, o + 4) == shtNote else { continue }
                let offset = f.word(table, o + (f.is64 ? 24 : 16))
                let size = f.word(table, o + (f.is64 ? 32 : 20))
                let align = f.word(table, o + (f.is64 ? 48 : 32))
                guard size > 0, size <= UInt64(maxNoteBytes),
                      let notes = try? r.bytes(at: offset, count: Int(size)) else { continue }
                buildID = findBuildID(notes, f, align: align)
            }
        }
        return ELFFile(buildID: buildID, loads: loads)
    }

    /// Walks the notes of one PT_NOTE segment or SHT_NOTE section.
    private static func findBuildID(_ b: [UInt8], _ f: Fields, align: UInt64) -> [UInt8]? {
        let a = align == 8 ? 8 : 4
        func up(_ x: Int) -> Int { (x + a - 1) & ~(a - 1) }
        var o = 0
        while o + 12 <= b.count {
            let namesz = Int(f.u32(b, o)), descsz = Int(f.u32(b, o + 4)), type = f.u32(b, o + 8)
            let nameStart = o + 12
            guard namesz <= b.count, descsz <= b.count else { return nil }
            let descStart = up(nameStart + namesz)
            let end = descStart + descsz
            guard end <= b.count else { return nil }
            if type == ntGNUBuildID, namesz == 4,
               b[nameStart] == 0x47, b[nameStart + 1] == 0x4E, b[nameStart + 2] == 0x55, b[nameStart + 3] == 0 {
                return Array(b[descStart..<end])
            }
            o = up(end)
        }
        return nil
    }
}
