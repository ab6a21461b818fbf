/* The program's own LeakSanitizer suppressions: a program may define
 * `const char *__lsan_default_suppressions(void)` (LeakSanitizer's hook)
 * returning suppression lines. At exit, before the leak scan, the shim finds
 * that function in the executable's symbol tables (.symtab, else .dynsym: an
 * ordinary build exports nothing, so dlsym would not see it) and calls it;
 * the collector reads the returned text from the process's memory. */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include "shim.h"

typedef const char *(*lsan_suppressions_fn)(void);

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
    return 1;                    /* the first object is the executable */
}

/* st_value of `name` in the symbol section `sh` of the mapped ELF file, or 0. */
static uint64_t find_in(const uint8_t *map, size_t len, const Elf64_Shdr *shdrs, unsigned count,
                        const Elf64_Shdr *sh, const char *name)
{
    if (sh->sh_link >= count || sh->sh_entsize != sizeof(Elf64_Sym)) return 0;
    const Elf64_Shdr *str = &shdrs[sh->sh_link];
    if (sh->sh_offset > len || sh->sh_size > len - sh->sh_offset) return 0;
    if (str->sh_offset > len || str->sh_size > len - str->sh_offset) return 0;
    const Elf64_Sym *syms = (const Elf64_Sym *)(map + sh->sh_offset);
    size_t n = sh->sh_size / sizeof(Elf64_Sym);
    const char *strings = (const char *)(map + str->sh_offset);
    size_t name_len = strlen(name);
    for (size_t i = 0; i < n; i++) {
        if (ELF64_ST_TYPE(syms[i].st_info) != STT_FUNC || syms[i].st_value == 0) continue;
        if (syms[i].st_name >= str->sh_size || str->sh_size - syms[i].st_name <= name_len) continue;
        if (memcmp(strings + syms[i].st_name, name, name_len + 1) == 0) return syms[i].st_value;
    }
    return 0;
}

/* Address of the executable's __lsan_default_suppressions, or NULL. No allocation:
 * the file is mapped, read and unmapped. */
static lsan_suppressions_fn find_hook(void)
{
    int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) { close(fd); return NULL; }
    size_t len = (size_t)st.st_size;
    const uint8_t *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return NULL;
    uint64_t value = 0;
    const Elf64_Ehdr *eh = (const Elf64_Ehdr *)map;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64
        && eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shoff < len
        && (size_t)eh->e_shnum * sizeof(Elf64_Shdr) <= len - eh->e_shoff) {
        const Elf64_Shdr *shdrs = (const Elf64_Shdr *)(map + eh->e_shoff);
        for (int pass = 0; pass < 2 && value == 0; pass++) {
            uint32_t type = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
            for (unsigned k = 0; k < eh->e_shnum && value == 0; k++)
                if (shdrs[k].sh_type == type)
                    value = find_in(map, len, shdrs, eh->e_shnum, &shdrs[k], "__lsan_default_suppressions");
        }
    }
    munmap((void *)map, len);
    if (value == 0) return NULL;
    uintptr_t bias = 0;
    dl_iterate_phdr(first_object, &bias);
    return (lsan_suppressions_fn)(bias + (uintptr_t)value);
}

const char *hg_lsan_default_suppressions(void)
{
    int cancel = hg_cancel_off();       /* open and close are cancellation points */
    lsan_suppressions_fn hook = find_hook();
    hg_cancel_restore(cancel);
    return hook ? hook() : NULL;
}
