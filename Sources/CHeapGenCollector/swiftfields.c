/* Stored-property names of a Swift class, read from the stopped target's
 * class metadata (heapgen --retention: an edge's offset named
 * `EventBus.subscribers`). See hg_swift_class_fields in CHeapGenCollector.h.
 *
 * Layouts (Swift ABI, Linux x86_64, no Objective-C interop; checked against
 * a swiftc-built fixture in RetentionGraphTests):
 *   class metadata: superclass +8, instanceSize u32 +24, description +40
 *   class context descriptor (relative pointers: int32 from their own field):
 *     flags u32 +0 (kind = low 5 bits, 16 = class; kind-specific flags in the
 *     high 16 bits, bit 13 = resilient superclass), fields rel +16,
 *     numFields u32 +36, fieldOffsetVectorOffset u32 +40 (words from the
 *     metadata address)
 *   field descriptor: fieldRecordSize u16 +10, numFields u32 +12, then
 *     records of 12 bytes: flags u32, mangledTypeName rel, fieldName rel
 *   field i's byte offset: metadata word [fieldOffsetVectorOffset + i]
 * Everything read is untrusted: bounds, counts and names are checked, and
 * garbage gives no names (a return of 0 or -1), never a crash. */
#include "CHeapGenCollector.h"

#include <errno.h>
#include <string.h>

#define MAX_DEPTH       64      /* superclass chain */
#define MAX_FIELDS      4096
#define MAX_NAME        256

static uint64_t relative(uint64_t field, int32_t offset)
{
    return offset == 0 ? 0 : field + (uint64_t)(int64_t)offset;
}

/* A plausible Swift identifier: printable ASCII or UTF-8, no spaces or quotes. */
static int printable_name(const char *s, ssize_t n)
{
    if (n <= 0) return 0;
    for (ssize_t k = 0; k < n; k++) {
        unsigned char c = (unsigned char)s[k];
        if (c <= 0x20 || c == 0x7f || c == '"' || c == '\\') return 0;
    }
    return 1;
}

/* Appends one class's own stored properties. Returns fields added, -1 on garbage. */
static int class_level(pid_t pid, uint64_t metadata, uint32_t instance_size, uint64_t description,
                       hg_swift_field *out, int room, char *names, size_t names_cap, size_t *names_used)
{
    uint32_t d[11];
    if (hg_read_remote(pid, description, d, sizeof d) != 0) return -1;
    if ((d[0] & 0x1f) != 16) return -1;                 /* not a class descriptor */
    if ((d[0] >> 16) & (1u << 13)) return 0;            /* resilient superclass: offsets elsewhere */
    uint32_t count = d[9], vector = d[10];
    if (count == 0) return 0;
    if (count > MAX_FIELDS || vector == 0 || vector > (1u << 16)) return -1;
    uint64_t fd = relative(description + 16, (int32_t)d[4]);
    uint32_t fh[4];
    if (hg_read_remote(pid, fd, fh, sizeof fh) != 0) return -1;
    uint16_t record_size = (uint16_t)(fh[2] >> 16);
    if (record_size != 12 || fh[3] != count) return -1;
    if ((int)count > room) return -1;
    uint64_t offsets[MAX_FIELDS];
    if (hg_read_remote(pid, metadata + 8ull * vector, offsets, count * sizeof offsets[0]) != 0) return -1;
    for (uint32_t i = 0; i < count; i++) {
        uint32_t rec[3];
        uint64_t at = fd + 16 + 12ull * i;
        if (hg_read_remote(pid, at, rec, sizeof rec) != 0) return -1;
        uint64_t name_at = relative(at + 8, (int32_t)rec[2]);
        char name[MAX_NAME];
        ssize_t n = hg_read_remote_string(pid, name_at, name, sizeof name);
        if (!printable_name(name, n)) return -1;
        if (offsets[i] >= instance_size || *names_used + (size_t)n + 1 > names_cap) return -1;
        memcpy(names + *names_used, name, (size_t)n + 1);
        out[i].offset = (uint32_t)offsets[i];
        out[i].name = (uint32_t)*names_used;
        *names_used += (size_t)n + 1;
    }
    return (int)count;
}

int hg_swift_class_fields(pid_t pid, uint64_t metadata, hg_swift_field *fields, int capacity,
                          char *names, size_t names_cap)
{
    int total = 0;
    size_t names_used = 0;
    for (int depth = 0; metadata != 0 && depth < MAX_DEPTH; depth++) {
        uint64_t m[6];
        if (hg_read_remote(pid, metadata, m, sizeof m) != 0) return depth == 0 ? -1 : total;
        uint32_t instance_size = (uint32_t)m[3];
        uint64_t description = m[5];
        if (instance_size == 0 || instance_size > (1u << 30) || description == 0)
            return depth == 0 ? -1 : total;
        int n = class_level(pid, metadata, instance_size, description, fields + total, capacity - total,
                            names, names_cap, &names_used);
        if (n < 0) return depth == 0 ? -1 : total;
        total += n;
        metadata = m[1];                                 /* the superclass's metadata, 0 at the root */
    }
    return total;
}
