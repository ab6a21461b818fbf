#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Decides which file, if any, to symbolize a module from: the module's own file when its
/// build ID matches the recorded one, else a separate debug file found by build ID
/// (`<dir>/.build-id/ab/cdef….debug`). Results are cached and re-checked when the file's
/// inode, size or mtime changes.
final class ModuleResolver {
    enum Resolution: Equatable {
        /// Symbolize from `file`; `stale` when that is a debug file standing in for a
        /// missing or rebuilt module.
        case usable(file: String, elf: ELFFile, stale: Bool)
        /// Nothing to symbolize from.
        case unusable(stale: Bool)

        var stale: Bool {
            switch self {
            case .usable(_, _, let s), .unusable(let s): return s
            }
        }
    }

    struct Key: Hashable {
        var path: String
        var buildID: [UInt8]
    }

    struct Stamp: Equatable {
        var device: UInt64, inode: UInt64, size: Int64, mtimeSeconds: Int, mtimeNanoseconds: Int
    }

    let debugFileDirectories: [String]
    private var cache: [Key: (stamp: Stamp?, resolution: Resolution)] = [:]

    init(debugFileDirectories: [String]) {
        self.debugFileDirectories = debugFileDirectories
    }

    static func stamp(_ path: String) -> Stamp? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return Stamp(device: UInt64(st.st_dev), inode: UInt64(st.st_ino), size: Int64(st.st_size),
                     mtimeSeconds: Int(st.st_mtim.tv_sec), mtimeNanoseconds: Int(st.st_mtim.tv_nsec))
    }

    func resolve(_ module: Module) -> Resolution {
        let key = Key(path: module.path, buildID: module.buildID)
        let stamp = module.path.isEmpty ? nil : Self.stamp(module.path)
        if let cached = cache[key], cached.stamp == stamp { return cached.resolution }
        let resolution = compute(module, exists: stamp != nil)
        cache[key] = (stamp, resolution)
        return resolution
    }

    private func compute(_ module: Module, exists: Bool) -> Resolution {
        if exists, case .success(let elf) = ELFFile.read(path: module.path) {
            // No recorded build ID: nothing to verify against, trust the file.
            if module.buildID.isEmpty || elf.buildID == module.buildID {
                return .usable(file: module.path, elf: elf, stale: false)
            }
        }
        // Missing, unreadable, not ELF, or rebuilt since the trace was taken.
        if !module.buildID.isEmpty {
            for dir in debugFileDirectories {
                guard let path = BuildID.debugFilePath(module.buildID, in: dir),
                      case .success(let elf) = ELFFile.read(path: path),
                      elf.buildID == module.buildID else { continue }
                return .usable(file: path, elf: elf, stale: true)
            }
        }
        return .unusable(stale: true)
    }
}
