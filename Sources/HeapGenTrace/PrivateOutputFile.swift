// Opening the files heapgen writes reports, exports and gate results to.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Opens an output path (`--output`, `--junit`, `--sarif`, `--summary`, `--write-baseline`,
/// a trace) for writing: never through a symbolic link (`O_NOFOLLOW`), and owner-only (mode 0600)
/// when it is a regular file, since reports name files and functions.
///
/// Only regular files are made private: writing to an existing device, FIFO or socket
/// (`/dev/null`, `/dev/stdout`, a pipe) leaves its mode alone. Changing it would change
/// it for every user of the system (`--output /dev/null` as root once made /dev/null 0600).
public enum PrivateOutputFile {
    /// Opens `path` for writing: created if missing; truncated, or appended to when
    /// `append`. Returns the descriptor, or `-errno`.
    ///
    /// A regular file that is truncated is made 0600 (an existing file keeps its mode
    /// through `O_TRUNC`); one that is appended to keeps its mode unless heapgen created it
    /// (then it is 0600 already). Other files are never chmod-ed.
    ///
    /// `replacing`: an existing regular file is unlinked and created anew (`O_EXCL`) rather
    /// than truncated. For a trace: ext4 writes a truncated file back at close (its
    /// `auto_da_alloc`, 17 ms at the end of a 40 MB recording here), and a hard link to the
    /// old trace keeps it. Anything else (no file, `/dev/null`, a FIFO, a file created
    /// meanwhile) is opened as without it.
    public static func open(_ path: String, append: Bool = false, replacing: Bool = false) -> Int32 {
        var fd: Int32 = -1
        var old = stat()
        if replacing && !append && lstat(path, &old) == 0 && (old.st_mode & S_IFMT) == S_IFREG && unlink(path) == 0 {
            repeat {
                fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode_t(0o600))
            } while fd < 0 && errno == EINTR
        }
        let flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | (append ? O_APPEND : O_TRUNC)
        while fd < 0 {
            fd = Glibc.open(path, flags, mode_t(0o600))
            if fd < 0 && errno != EINTR { return -errno }
        }
        var info = stat()
        if fstat(fd, &info) != 0 {
            let e = errno
            close(fd)
            return -e
        }
        if !append && (info.st_mode & S_IFMT) == S_IFREG && (info.st_mode & 0o7777) != 0o600
            && fchmod(fd, mode_t(0o600)) != 0 {
            let e = errno
            close(fd)
            return -e
        }
        return fd
    }
}
