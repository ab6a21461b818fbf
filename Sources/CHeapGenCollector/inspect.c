/* Looks at the program before it is started: LD_PRELOAD only works for a
 * dynamically linked, non-setuid ELF (or a script run by one). */
#include "CHeapGenCollector.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* The kernel follows at most 4 levels of #! (BINPRM nesting) and reads the
 * first 256 bytes for the #! line. */
#define HG_MAX_SCRIPT_DEPTH 4
#define HG_SHEBANG_MAX 256

static void set_culprit(char *culprit, size_t len, const char *path) {
    if (culprit && len) snprintf(culprit, len, "%s", path);
}

static int pread_all(int fd, void *buf, size_t len, off_t off) {
    size_t got = 0;
    while (got < len) {
        ssize_t n = pread(fd, (char *)buf + got, len - got, off + (off_t)got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        got += (size_t)n;
    }
    return 0;
}

/* Whether running `path` (stat `st`) changes who the program runs as, which
 * is when the loader ignores LD_PRELOAD (AT_SECURE): a set-user-ID file
 * owned by someone other than us, a set-group-ID one (group-executable) of
 * another group. Not so for root running a setuid-root program (su, ping,
 * mount), nor on a nosuid mount, nor under no_new_privs, where the bits are
 * ignored. */
static int changes_identity(const char *path, const struct stat *st) {
    const int uid = (st->st_mode & S_ISUID) && st->st_uid != getuid();
    const int gid = (st->st_mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP) && st->st_gid != getgid();
    if (!uid && !gid) return 0;
    struct statvfs fs;
    if (statvfs(path, &fs) == 0 && (fs.f_flag & ST_NOSUID)) return 0;
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1) return 0;
    return 1;
}

static int inspect(const char *path, int depth, char *culprit, size_t culprit_len) {
    struct stat st;
    if (stat(path, &st) != 0) {
        set_culprit(culprit, culprit_len, path);
        return errno == ENOENT || errno == ENOTDIR ? HG_INSPECT_NOT_FOUND : HG_INSPECT_UNREADABLE;
    }
    if (!S_ISREG(st.st_mode)) {
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_NOT_REGULAR;
    }
    if (access(path, X_OK) != 0) {
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_NOT_EXEC;
    }
    if (changes_identity(path, &st)) {
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_SETID;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_UNREADABLE;
    }
    unsigned char head[HG_SHEBANG_MAX + 1];
    ssize_t n;
    do n = pread(fd, head, HG_SHEBANG_MAX, 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        close(fd);
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_UNREADABLE;
    }
    head[n] = 0;

    if (n >= 2 && head[0] == '#' && head[1] == '!') {
        close(fd);
        if (depth >= HG_MAX_SCRIPT_DEPTH) {
            set_culprit(culprit, culprit_len, path);
            return HG_INSPECT_SCRIPT_LOOP;
        }
        /* "#!" [blanks] interpreter [blanks arg] newline */
        char interp[HG_SHEBANG_MAX + 1];
        size_t i = 2, k = 0;
        while (i < (size_t)n && (head[i] == ' ' || head[i] == '\t')) i++;
        while (i < (size_t)n && head[i] != ' ' && head[i] != '\t' && head[i] != '\n' && head[i] != 0)
            interp[k++] = (char)head[i++];
        interp[k] = 0;
        if (k == 0) {
            set_culprit(culprit, culprit_len, path);
            return HG_INSPECT_NOT_ELF;
        }
        int r = inspect(interp, depth + 1, culprit, culprit_len);
        if (r != HG_INSPECT_OK && culprit && culprit_len && culprit[0] == 0) set_culprit(culprit, culprit_len, interp);
        return r;
    }

    Elf64_Ehdr eh;
    if ((size_t)n < EI_NIDENT || memcmp(head, ELFMAG, SELFMAG) != 0) {
        close(fd);
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_NOT_ELF;
    }
    if ((size_t)n < sizeof eh || head[EI_CLASS] != ELFCLASS64 || head[EI_DATA] != ELFDATA2LSB) {
        close(fd);
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_BAD_ELF;
    }
    memcpy(&eh, head, sizeof eh);
    if (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64) {
        close(fd);
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_BAD_ELF;
    }
    if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0 || eh.e_phnum > 4096) {
        close(fd);
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_BAD_ELF;
    }
    int has_interp = 0;
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;
        if (pread_all(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * sizeof ph)) != 0) {
            close(fd);
            set_culprit(culprit, culprit_len, path);
            return HG_INSPECT_BAD_ELF;
        }
        if (ph.p_type == PT_INTERP) has_interp = 1;
    }
    close(fd);
    if (!has_interp) {
        set_culprit(culprit, culprit_len, path);
        return HG_INSPECT_STATIC;
    }
    return HG_INSPECT_OK;
}

int hg_inspect_program(const char *path, char *culprit, size_t culprit_len) {
    if (culprit && culprit_len) culprit[0] = 0;
    int r = inspect(path, 0, culprit, culprit_len);
    return r;
}
