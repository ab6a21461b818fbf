/* unwind.c -- fast CFI stack unwinder with a libunwind fallback.
 *
 * Hot path: for each return address, one lookup in a lock-free hash table of
 * packed 8-byte rules ("CFA = RSP|RBP + off, RA at CFA-8, RBP at CFA+b"), two
 * bounds-checked stack loads, done.  The rules are derived on a miss from the
 * object's .eh_frame_hdr / .eh_frame (located with _dl_find_object, which is
 * lock-free), by running the CFA program up to the call instruction.
 *
 * Anything not provably handled becomes an UNSUP rule, and any UNSUP frame or
 * failed validation redoes the whole stack with libunwind: the fast path is an
 * optimisation, never a source of different answers.
 *
 * No function here allocates except hg_unwind_thread_init (pthread_getattr_np)
 * and the libunwind fallback; see unwind.h for the caller's contract.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define hg_likely(x)   __builtin_expect(!!(x), 1)
#define hg_unlikely(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------------
 * Rules
 * ---------------------------------------------------------------------- */

enum {
    RF_CFA_RBP   = 1u << 0,   /* CFA = RBP + cfa_off (else RSP + cfa_off)      */
    RF_RBP_SAVED = 1u << 1,   /* caller's RBP at CFA + rbp_off (else unchanged) */
    RF_END       = 1u << 2,   /* RA undefined: outermost frame (_start, clone3) */
    RF_UNSUP     = 1u << 3,   /* not expressible here: use libunwind            */
    RF_NOFDE     = 1u << 4,   /* no FDE covers the pc: frame-pointer guess      */
};

/* Exactly 8 bytes so a cache entry is {key, rule} = 16 bytes.  The return
 * address is always at CFA-8 on x86-64 (pushed by `call`); a CFI program that
 * says otherwise is UNSUP, which keeps an add off the per-frame critical path. */
typedef struct hg_rule {
    int32_t cfa_off;
    int16_t rbp_off;
    uint8_t flags;
    uint8_t _pad;
} hg_rule;
_Static_assert(sizeof(hg_rule) == 8, "hg_rule must pack into 8 bytes");

static const hg_rule rule_unsup = { 0, 0, RF_UNSUP, 0 };
/* No CFI for the pc: assume a frame-pointer frame, as libunwind does (Swift
 * emits no FDE for its nounwind functions, but keeps frame pointers). */
static const hg_rule rule_nofde = { 16, -16, RF_CFA_RBP | RF_RBP_SAVED | RF_NOFDE, 0 };

/* ------------------------------------------------------------------------
 * Rule cache: open addressing, bounded linear probing, lock-free.
 *
 * key = pc | epoch << 48 (user-space pcs fit in 48 bits; others are not
 * cached).  0 = empty slot, KEY_BUSY = a writer owns the slot.  A writer
 * claims an empty or stale (other epoch) slot by CAS to BUSY, so two writers
 * never interleave their rule/key stores; readers validate seqlock-style
 * (key, rule, key) so a slot being recycled under them reads as a miss.
 * Slots never go back to 0, so a probe chain is never cut short.
 * ---------------------------------------------------------------------- */

#define CACHE_BITS   16
#define CACHE_SIZE   ((size_t)1 << CACHE_BITS)        /* 64 Ki x 16 B = 1 MiB */
#define CACHE_MASK   (CACHE_SIZE - 1)
#define CACHE_PROBES 8
#define KEY_BUSY     (~(uint64_t)0)
#define KEY_PC_BITS  48
#define KEY_PC_MASK  (((uint64_t)1 << KEY_PC_BITS) - 1)

/* The rule is written as one 64-bit store but read field by field, so the
 * reader's loads sign-extend straight from memory (no unpacking on the
 * per-frame dependency chain); the seqlock check makes the mix safe. */
typedef struct cache_entry {
    uint64_t key;
    union { uint64_t bits; hg_rule r; } rule;
} cache_entry;

static cache_entry *_Atomic hg_cache;
static _Atomic uint32_t     hg_epoch = 1;
static _Atomic int          hg_mode  = HG_UNWIND_FAST;
static _Atomic uint64_t     hg_fallbacks;
/* Where the shim wants fallbacks counted too (its segment header), so the
 * collector sees them without a check on every allocation. */
static uint64_t *_Atomic    hg_fallback_sink;
static _Atomic uint64_t     hg_fallbacks_unaligned;

static inline uint64_t epoch_tag(void) {
    return (uint64_t)(atomic_load_explicit(&hg_epoch, memory_order_relaxed) & 0xffff) << KEY_PC_BITS;
}

/* The slot is the pc's low bits, unhashed: return addresses are spread
 * evenly in their low bits, objects are mapped at random page offsets, and a
 * multiplicative hash would add ~4 cycles to every frame's dependency chain
 * (pc -> slot -> rule -> CFA -> next pc).  The epoch is not part of the slot,
 * so a stale entry for the same pc sits where its replacement goes. */
static inline size_t cache_slot(uintptr_t pc) {
    return (size_t)pc & CACHE_MASK;
}

static inline bool cache_get(cache_entry *c, uintptr_t pc, uint64_t key, hg_rule *out) {
    /* byte offset straight from the pc (shl+and, folded into the load's
     * address) rather than index*16: one op less on the per-frame chain */
    size_t off = ((size_t)pc << 4) & (CACHE_MASK << 4);
    for (int probe = 0; probe < CACHE_PROBES; probe++, off = (off + sizeof(cache_entry)) & (CACHE_MASK << 4)) {
        cache_entry *e = (cache_entry *)((char *)c + off);
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (hg_likely(k == key)) {
            out->cfa_off = __atomic_load_n(&e->rule.r.cfa_off, __ATOMIC_RELAXED);
            out->rbp_off = __atomic_load_n(&e->rule.r.rbp_off, __ATOMIC_RELAXED);
            out->flags   = __atomic_load_n(&e->rule.r.flags, __ATOMIC_RELAXED);
            __atomic_thread_fence(__ATOMIC_ACQUIRE);
            return hg_likely(__atomic_load_n(&e->key, __ATOMIC_RELAXED) == key);
            /* (if not: recycled under us, recompute) */
        }
        if (k == 0) return false;
    }
    return false;
}

/* Claim slot `e` (currently `k`) and publish {key, rule}. */
static bool cache_claim(cache_entry *e, uint64_t k, uint64_t key, hg_rule rule) {
    if (!__atomic_compare_exchange_n(&e->key, &k, KEY_BUSY, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return false;
    __atomic_thread_fence(__ATOMIC_RELEASE);                    /* BUSY before the rule */
    uint64_t bits;
    memcpy(&bits, &rule, sizeof bits);
    __atomic_store_n(&e->rule.bits, bits, __ATOMIC_RELAXED);
    __atomic_store_n(&e->key, key, __ATOMIC_RELEASE);
    return true;
}

static void cache_put(cache_entry *c, uintptr_t pc, uint64_t key, hg_rule rule) {
    const uint64_t tag = key & ~KEY_PC_MASK;
    size_t i = cache_slot(pc);
    for (int probe = 0; probe < CACHE_PROBES; probe++, i = (i + 1) & CACHE_MASK) {
        cache_entry *e = &c[i];
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
        if (k == key) return;                                   /* another thread won */
        if (k == KEY_BUSY || (k != 0 && (k & ~KEY_PC_MASK) == tag)) continue;
        if (cache_claim(e, k, key, rule)) return;               /* was empty or stale */
    }
    /* Chain full of live entries: evict the home slot rather than leave this
     * pc uncached (a ~100 ns/frame recompute on every call).  Readers of the
     * evicted entry see the key change and recompute; nothing is torn. */
    cache_entry *e = &c[cache_slot(pc)];
    uint64_t k = __atomic_load_n(&e->key, __ATOMIC_RELAXED);
    if (k != KEY_BUSY) cache_claim(e, k, key, rule);
}

/* ------------------------------------------------------------------------
 * DWARF / eh_frame decoding
 * ---------------------------------------------------------------------- */

enum {
    DW_EH_PE_absptr  = 0x00, DW_EH_PE_uleb128 = 0x01, DW_EH_PE_udata2 = 0x02,
    DW_EH_PE_udata4  = 0x03, DW_EH_PE_udata8  = 0x04, DW_EH_PE_sleb128 = 0x09,
    DW_EH_PE_sdata2  = 0x0a, DW_EH_PE_sdata4  = 0x0b, DW_EH_PE_sdata8  = 0x0c,
    DW_EH_PE_pcrel   = 0x10, DW_EH_PE_datarel = 0x30,
    DW_EH_PE_indirect = 0x80, DW_EH_PE_omit = 0xff,
};

enum { DW_REG_RBP = 6, DW_REG_RSP = 7, DW_REG_RA = 16 };

static inline uint16_t rd16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* LEB128 body shared by uleb/sleb: *shift and *last report where it ended,
 * which sleb needs for sign extension. */
static uint64_t leb(const uint8_t **pp, unsigned *shift, uint8_t *last) {
    const uint8_t *p = *pp;
    uint64_t v = 0;
    unsigned s = 0;
    uint8_t b;
    do {
        b = *p++;
        if (s < 64) v |= (uint64_t)(b & 0x7f) << s;
        s += 7;
    } while (b & 0x80);
    *pp = p;
    *shift = s;
    *last = b;
    return v;
}

static uint64_t uleb(const uint8_t **pp) {
    unsigned shift;
    uint8_t last;
    return leb(pp, &shift, &last);
}

static int64_t sleb(const uint8_t **pp) {
    unsigned shift;
    uint8_t last;
    uint64_t v = leb(pp, &shift, &last);
    if (shift < 64 && (last & 0x40)) v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* Read one DW_EH_PE-encoded value.  Applications: absolute, pcrel (relative
 * to the field), datarel (relative to `dbase`, only meaningful in
 * .eh_frame_hdr on x86-64).  textrel/funcrel/aligned are never produced for
 * x86-64 eh_frame and are refused.  Pass `enc & 0x0f` to read a bare value
 * (pc_range) or to skip a pointer without dereferencing (personality). */
static bool read_enc(const uint8_t **pp, uint8_t enc, uintptr_t dbase, uintptr_t *out) {
    const uint8_t *p = *pp;
    uint64_t v;
    if (enc == DW_EH_PE_omit) return false;
    switch (enc & 0x0f) {
    case DW_EH_PE_absptr:  v = rd64(p); p += 8; break;
    case DW_EH_PE_uleb128: v = uleb(&p); break;
    case DW_EH_PE_udata2:  v = rd16(p); p += 2; break;
    case DW_EH_PE_udata4:  v = rd32(p); p += 4; break;
    case DW_EH_PE_udata8:  v = rd64(p); p += 8; break;
    case DW_EH_PE_sleb128: v = (uint64_t)sleb(&p); break;
    case DW_EH_PE_sdata2:  v = (uint64_t)(int64_t)(int16_t)rd16(p); p += 2; break;
    case DW_EH_PE_sdata4:  v = (uint64_t)(int64_t)(int32_t)rd32(p); p += 4; break;
    case DW_EH_PE_sdata8:  v = rd64(p); p += 8; break;
    default: return false;
    }
    switch (enc & 0x70) {
    case 0:               break;
    case DW_EH_PE_pcrel:  v += (uintptr_t)*pp; break;
    case DW_EH_PE_datarel:
        if (!dbase) return false;
        v += dbase;
        break;
    default: return false;
    }
    if (enc & DW_EH_PE_indirect) v = *(const uintptr_t *)(uintptr_t)v;
    *pp = p;
    *out = (uintptr_t)v;
    return true;
}

/* Binary-search .eh_frame_hdr for the FDE that may cover ip: 1 and *fde set,
 * 0 if ip is below every entry (no FDE), -1 if the table can't be searched.
 * Only fixed-size, absolute or datarel table encodings can be searched;
 * anything else (or a missing table) makes the caller fall back rather than
 * scan .eh_frame linearly. */
static int hdr_find_fde(const uint8_t *hdr, uintptr_t ip, const uint8_t **fde) {
    if (hdr[0] != 1) return -1;
    const uint8_t ptr_enc = hdr[1], cnt_enc = hdr[2], tab_enc = hdr[3];
    const uint8_t *p = hdr + 4;
    const uintptr_t base = (uintptr_t)hdr;
    uintptr_t eh_frame, count;
    if (!read_enc(&p, ptr_enc, base, &eh_frame)) return -1;
    if (tab_enc == DW_EH_PE_omit || !read_enc(&p, cnt_enc, base, &count)) return -1;
    if (count == 0) return 0;

    size_t esz;
    switch (tab_enc & 0x0f) {
    case DW_EH_PE_udata4: case DW_EH_PE_sdata4: esz = 4; break;
    case DW_EH_PE_udata8: case DW_EH_PE_sdata8: case DW_EH_PE_absptr: esz = 8; break;
    default: return -1;
    }
    const uint8_t app = tab_enc & 0x70;
    if ((app != 0 && app != DW_EH_PE_datarel) || (tab_enc & DW_EH_PE_indirect)) return -1;
    const uintptr_t tbase = app == DW_EH_PE_datarel ? base : 0;
    const bool sgn = (tab_enc & 0x0f) == DW_EH_PE_sdata4;

#define HDR_VAL(q) (tbase + (esz == 4 ? (sgn ? (uintptr_t)(intptr_t)(int32_t)rd32(q) : (uintptr_t)rd32(q)) \
                                      : (uintptr_t)rd64(q)))
    /* last entry with initial_loc <= ip */
    size_t lo = 0, hi = count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (HDR_VAL(p + mid * 2 * esz) <= ip) lo = mid; else hi = mid;
    }
    if (HDR_VAL(p + lo * 2 * esz) > ip) return 0;
    *fde = (const uint8_t *)HDR_VAL(p + lo * 2 * esz + esz);
    return 1;
#undef HDR_VAL
}

typedef struct cie_info {
    const uint8_t *insn, *end;     /* initial instructions */
    uint64_t code_align;
    int64_t  data_align;
    uint8_t  fde_enc;
    bool     has_z;
} cie_info;

/* Parse the CIE header; false if it is something we must not interpret
 * (signal frame 'S', old "eh" augmentation, RA column other than 16). */
static bool parse_cie(const uint8_t *cie, cie_info *ci) {
    const uint8_t *p = cie;
    uint64_t len = rd32(p); p += 4;
    bool is64 = false;
    if (len == 0xffffffffu) { len = rd64(p); p += 8; is64 = true; }
    if (len == 0) return false;
    const uint8_t *end = p + len;
    uint64_t id = is64 ? rd64(p) : rd32(p);
    p += is64 ? 8 : 4;
    if (id != 0) return false;                       /* not a CIE */
    const uint8_t version = *p++;
    if (version != 1 && version != 3 && version != 4) return false;
    const char *aug = (const char *)p;
    p += strlen(aug) + 1;
    if (version == 4) {
        if (p[0] != 8 || p[1] != 0) return false;     /* address / segment size */
        p += 2;
    }
    ci->code_align = uleb(&p);
    ci->data_align = sleb(&p);
    const uint64_t ra_reg = version == 1 ? *p++ : uleb(&p);
    if (ra_reg != DW_REG_RA) return false;
    ci->fde_enc = DW_EH_PE_absptr;
    ci->has_z = false;
    if (strchr(aug, 'S')) return false;                 /* signal frame: libunwind's job */
    if (aug[0] == 'z') {
        ci->has_z = true;
        uint64_t alen = uleb(&p);
        const uint8_t *aend = p + alen;
        for (const char *a = aug + 1; *a; a++) {
            if (*a == 'R') ci->fde_enc = *p++;
            else if (*a == 'L') p++;
            else if (*a == 'P') {                       /* personality: skip, don't follow */
                uint8_t penc = *p++;
                uintptr_t dummy;
                if ((penc & 0x70) == 0x50 || !read_enc(&p, penc & 0x0f, 0, &dummy)) return false;
            }
            else break;                                 /* unknown ('B', 'G'...): 'z' lets us skip */
        }
        p = aend;
    } else if (aug[0] != 0) {
        return false;
    }
    ci->insn = p;
    ci->end = end;
    return true;
}

/* Register rule, for the three registers we track. */
enum { RR_UNSET = 0, RR_SAME, RR_UNDEF, RR_OFFSET, RR_OTHER };
typedef struct reg_rule { uint8_t how; int64_t off; } reg_rule;

typedef struct cfa_state {
    uint64_t cfa_reg;
    int64_t  cfa_off;
    bool     cfa_expr;
    reg_rule rbp, ra, rsp;
} cfa_state;

#define CFA_STACK_DEPTH 8

static inline reg_rule *track(cfa_state *s, uint64_t reg) {
    switch (reg) {
    case DW_REG_RBP: return &s->rbp;
    case DW_REG_RA:  return &s->ra;
    case DW_REG_RSP: return &s->rsp;
    default:      return NULL;      /* not needed unless it defines the CFA */
    }
}

static inline void set_reg(cfa_state *s, uint64_t reg, uint8_t how, int64_t off) {
    reg_rule *r = track(s, reg);
    if (r) { r->how = how; r->off = off; }
}

/* Run a CFA program from `loc` until the location passes `target` (the call
 * instruction, pc-1).  `init` is the state after the CIE's initial
 * instructions (for DW_CFA_restore), NULL while running those. */
static bool cfa_run(const uint8_t *p, const uint8_t *end, const cie_info *ci,
                    uintptr_t loc, uintptr_t target, cfa_state *s, const cfa_state *init) {
    cfa_state stack[CFA_STACK_DEPTH];
    int depth = 0;
    while (p < end) {
        const uint8_t op = *p++;
        uint64_t reg, n, delta;
        switch (op >> 6) {
        case 1:  /* DW_CFA_advance_loc */
            delta = op & 0x3f;
            goto advance;
        case 2:  /* DW_CFA_offset */
            n = uleb(&p);
            set_reg(s, op & 0x3f, RR_OFFSET, (int64_t)n * ci->data_align);
            continue;
        case 3:  /* DW_CFA_restore */
            reg = op & 0x3f;
            goto restore;
        default:
            break;
        }
        switch (op) {
        case 0x00: continue;                                            /* nop */
        case 0x01: {                                                    /* set_loc */
            uintptr_t a;
            if (!read_enc(&p, ci->fde_enc, 0, &a)) return false;
            if (a > target) return true;
            loc = a;
            continue;
        }
        case 0x02: delta = *p++;          goto advance;                 /* advance_loc1 */
        case 0x03: delta = rd16(p); p += 2; goto advance;               /* advance_loc2 */
        case 0x04: delta = rd32(p); p += 4; goto advance;               /* advance_loc4 */
        case 0x05:                                                      /* offset_extended */
            reg = uleb(&p); n = uleb(&p);
            set_reg(s, reg, RR_OFFSET, (int64_t)n * ci->data_align);
            continue;
        case 0x06: reg = uleb(&p); goto restore;                        /* restore_extended */
        case 0x07: set_reg(s, uleb(&p), RR_UNDEF, 0); continue;         /* undefined */
        case 0x08: set_reg(s, uleb(&p), RR_SAME, 0); continue;          /* same_value */
        case 0x09:                                                      /* register */
            reg = uleb(&p); (void)uleb(&p);
            set_reg(s, reg, RR_OTHER, 0);
            continue;
        case 0x0a:                                                      /* remember_state */
            if (depth == CFA_STACK_DEPTH) return false;
            stack[depth++] = *s;
            continue;
        case 0x0b:                                                      /* restore_state */
            if (depth == 0) return false;
            *s = stack[--depth];
            continue;
        case 0x0c:                                                      /* def_cfa */
            s->cfa_reg = uleb(&p);
            s->cfa_off = (int64_t)uleb(&p);
            s->cfa_expr = false;
            continue;
        case 0x0d:                                                      /* def_cfa_register */
            s->cfa_reg = uleb(&p);
            s->cfa_expr = false;
            continue;
        case 0x0e: s->cfa_off = (int64_t)uleb(&p); continue;            /* def_cfa_offset */
        case 0x0f:                                                      /* def_cfa_expression */
            n = uleb(&p); p += n;
            s->cfa_expr = true;
            continue;
        case 0x10:                                                      /* expression */
        case 0x16:                                                      /* val_expression */
            reg = uleb(&p); n = uleb(&p); p += n;
            set_reg(s, reg, RR_OTHER, 0);
            continue;
        case 0x11:                                                      /* offset_extended_sf */
            reg = uleb(&p);
            set_reg(s, reg, RR_OFFSET, sleb(&p) * ci->data_align);
            continue;
        case 0x12:                                                      /* def_cfa_sf */
            s->cfa_reg = uleb(&p);
            s->cfa_off = sleb(&p) * ci->data_align;
            s->cfa_expr = false;
            continue;
        case 0x13: s->cfa_off = sleb(&p) * ci->data_align; continue;    /* def_cfa_offset_sf */
        case 0x14:                                                      /* val_offset */
            reg = uleb(&p); (void)uleb(&p);
            set_reg(s, reg, RR_OTHER, 0);
            continue;
        case 0x15:                                                      /* val_offset_sf */
            reg = uleb(&p); (void)sleb(&p);
            set_reg(s, reg, RR_OTHER, 0);
            continue;
        case 0x2e: (void)uleb(&p); continue;                            /* GNU_args_size */
        case 0x2f:                                                      /* GNU_negative_offset_extended */
            reg = uleb(&p); n = uleb(&p);
            set_reg(s, reg, RR_OFFSET, -(int64_t)n * ci->data_align);
            continue;
        default:
            return false;                   /* unknown / vendor op: can't trust the rest */
        }
    advance:
        loc += delta * ci->code_align;
        if (loc > target) return true;
        continue;
    restore:
        if (!init) return false;
        switch (reg) {
        case DW_REG_RBP: s->rbp = init->rbp; break;
        case DW_REG_RA:  s->ra  = init->ra;  break;
        case DW_REG_RSP: s->rsp = init->rsp; break;
        default: break;
        }
        continue;
    }
    return true;
}

static hg_rule rule_from_state(const cfa_state *s) {
    hg_rule r = { 0, 0, 0, 0 };
    if (s->ra.how == RR_UNDEF) { r.flags = RF_END; return r; }
    if (s->cfa_expr || (s->cfa_reg != DW_REG_RSP && s->cfa_reg != DW_REG_RBP)) return rule_unsup;
    if (s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX) return rule_unsup;
    if (s->ra.how != RR_OFFSET || s->ra.off != -8) return rule_unsup;
    if (s->rsp.how != RR_UNSET && s->rsp.how != RR_SAME) return rule_unsup;   /* we assume SP' = CFA */
    r.cfa_off = (int32_t)s->cfa_off;
    if (s->cfa_reg == DW_REG_RBP) r.flags |= RF_CFA_RBP;
    switch (s->rbp.how) {
    case RR_UNSET: case RR_SAME: break;
    case RR_OFFSET:
        if (s->rbp.off < INT16_MIN || s->rbp.off > INT16_MAX) return rule_unsup;
        r.rbp_off = (int16_t)s->rbp.off;
        r.flags |= RF_RBP_SAVED;
        break;
    default: return rule_unsup;   /* undefined / in another register / expression */
    }
    return r;
}

/* Compute the rule for return address `pc` (i.e. for the call at pc-1). */
static hg_rule rule_compute(uintptr_t pc) {
    const uintptr_t ip = pc - 1;
    struct dl_find_object dlfo;
    /* Not in any object (JIT code?) or in one without .eh_frame_hdr: no CFI. */
    if (_dl_find_object((void *)ip, &dlfo) != 0 || !dlfo.dlfo_eh_frame) return rule_nofde;
    const uint8_t *fde;
    const int found = hdr_find_fde((const uint8_t *)dlfo.dlfo_eh_frame, ip, &fde);
    if (found <= 0) return found == 0 ? rule_nofde : rule_unsup;

    const uint8_t *p = fde;
    uint64_t len = rd32(p); p += 4;
    bool is64 = false;
    if (len == 0xffffffffu) { len = rd64(p); p += 8; is64 = true; }
    if (len == 0) return rule_unsup;
    const uint8_t *end = p + len;
    const uint8_t *idp = p;
    uint64_t cie_ptr = is64 ? rd64(p) : rd32(p);
    p += is64 ? 8 : 4;
    if (cie_ptr == 0) return rule_unsup;                 /* that's a CIE, not an FDE */

    cie_info ci;
    if (!parse_cie(idp - cie_ptr, &ci)) return rule_unsup;
    uintptr_t start, range;
    if (!read_enc(&p, ci.fde_enc, 0, &start)) return rule_unsup;
    if (!read_enc(&p, ci.fde_enc & 0x0f, 0, &range)) return rule_unsup;
    if (ip < start || ip - start >= range) return rule_nofde;   /* gap between FDEs */
    if (ci.has_z) { uint64_t alen = uleb(&p); p += alen; }

    cfa_state s;
    memset(&s, 0, sizeof s);
    s.cfa_reg = ~(uint64_t)0;
    if (!cfa_run(ci.insn, ci.end, &ci, start, ip, &s, NULL)) return rule_unsup;
    const cfa_state init = s;
    if (!cfa_run(p, end, &ci, start, ip, &s, &init)) return rule_unsup;
    return rule_from_state(&s);
}

/* ------------------------------------------------------------------------
 * Setup, per-thread stack bounds
 * ---------------------------------------------------------------------- */

/* Stack bounds of this thread.  hi == 0: not fetched yet.  lo == UINTPTR_MAX:
 * unknown, so every bounds check fails and every stack goes to libunwind. */
static __thread struct { uintptr_t lo, hi; } hg_stack
    __attribute__((tls_model("initial-exec")));

void hg_unwind_thread_init(void) {
    uintptr_t lo = UINTPTR_MAX, hi = 8;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
        void *addr;
        size_t size;
        if (pthread_attr_getstack(&attr, &addr, &size) == 0 && size >= 16) {
            lo = (uintptr_t)addr;
            hi = (uintptr_t)addr + size;
        }
        pthread_attr_destroy(&attr);
    }
    hg_stack.lo = lo;
    hg_stack.hi = hi;
}

int hg_unwind_init(void) {
    static _Atomic int policy_set;
    if (!atomic_exchange_explicit(&policy_set, 1, memory_order_relaxed))
        unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    if (atomic_load_explicit(&hg_cache, memory_order_acquire)) return 0;
    void *m = mmap(NULL, CACHE_SIZE * sizeof(cache_entry), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return -1;
    cache_entry *expect = NULL;
    if (!atomic_compare_exchange_strong_explicit(&hg_cache, &expect, (cache_entry *)m,
                                                 memory_order_acq_rel, memory_order_acquire))
        munmap(m, CACHE_SIZE * sizeof(cache_entry));       /* lost the race: use theirs */
    return 0;
}

void hg_unwind_invalidate(void) {
    /* Entries of other epochs never match and are recycled by cache_put.
     * (The 16-bit tag wraps after 65536 dlcloses; an entry that survived
     * that long untouched would match again -- accepted.) */
    atomic_fetch_add_explicit(&hg_epoch, 1, memory_order_acq_rel);
}

uint64_t hg_unwind_fallbacks(void) {
    return atomic_load_explicit(&hg_fallbacks, memory_order_relaxed);
}

void hg_unwind_set_fallback_sink(uint64_t *counter) {
    atomic_store_explicit(&hg_fallback_sink, counter, memory_order_relaxed);
}

uint64_t hg_unwind_fallbacks_unaligned(void) {
    return atomic_load_explicit(&hg_fallbacks_unaligned, memory_order_relaxed);
}

void hg_unwind_set_mode(int mode) {
    atomic_store_explicit(&hg_mode, mode == HG_UNWIND_LIBUNWIND ? HG_UNWIND_LIBUNWIND : HG_UNWIND_FAST,
                          memory_order_relaxed);
}

int hg_unwind_get_mode(void) {
    return atomic_load_explicit(&hg_mode, memory_order_relaxed);
}

/* ------------------------------------------------------------------------
 * Unwinding
 * ---------------------------------------------------------------------- */

/* unw_backtrace's trace starts at its return address into unwind_slow, then
 * the interposed function (hg_unwind tail-calls unwind_slow, so it has no
 * frame of its own), then st->pc.  We look for st->pc rather than trusting
 * that count; the count is only the last resort (checked by unwind_check). */
#define SLOW_SEARCH     16   /* look for st->pc among this many leading frames */
#define SLOW_FIXED_SKIP 2    /* unwind_slow, interposed function */

static int __attribute__((noinline))
unwind_slow(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated) {
    void *buf[HG_UNWIND_MAX_FRAMES + SLOW_SEARCH + 1];
    int got = unw_backtrace(buf, (int)(sizeof buf / sizeof buf[0]));
    int first = -1;
    for (int i = 0; i < got && i < SLOW_SEARCH; i++)
        if ((uintptr_t)buf[i] == st->pc) { first = i; break; }
    if (first < 0) {
        atomic_fetch_add_explicit(&hg_fallbacks_unaligned, 1, memory_order_relaxed);
        first = got < SLOW_FIXED_SKIP ? got : SLOW_FIXED_SKIP;
    }
    int n = got - first;
    if (n > max) { n = max; *truncated = 1; }
    for (int i = 0; i < n; i++) pcs[i] = (uintptr_t)buf[first + i];
    return n;
}

static hg_rule __attribute__((noinline))
rule_miss(cache_entry *c, uint64_t key, uintptr_t pc) {
    hg_rule r = rule_compute(pc);
    if (c && (pc & ~KEY_PC_MASK) == 0) cache_put(c, pc, key, r);
    return r;
}

static inline hg_rule rule_get(cache_entry *c, uint64_t tag, uintptr_t pc) {
    const uint64_t key = pc | tag;
    hg_rule r;
    if (hg_likely(c != NULL) && hg_likely(cache_get(c, pc, key, &r)))
        return r;
    return rule_miss(c, key, pc);
}

/* An 8-byte stack slot we may read: aligned and inside this thread's stack. */
static inline bool slot_ok(uintptr_t a, uintptr_t lo, uintptr_t hi) {
    return (a & 7) == 0 && a >= lo && a <= hi - 8;
}

int hg_unwind(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated) {
    *truncated = 0;
    if (max <= 0 || st->pc == 0) return 0;
    if (max > HG_UNWIND_MAX_FRAMES) max = HG_UNWIND_MAX_FRAMES;
    if (hg_unlikely(atomic_load_explicit(&hg_mode, memory_order_relaxed) == HG_UNWIND_LIBUNWIND))
        return unwind_slow(st, pcs, max, truncated);

    cache_entry *c = atomic_load_explicit(&hg_cache, memory_order_acquire);
    if (hg_unlikely(c == NULL)) {
        hg_unwind_init();
        c = atomic_load_explicit(&hg_cache, memory_order_acquire);
    }
    if (hg_unlikely(hg_stack.hi == 0)) hg_unwind_thread_init();
    const uintptr_t lo = hg_stack.lo, hi = hg_stack.hi;
    const uint64_t tag = epoch_tag();

    /* Frame i: pc = its return address, sp = the callee's CFA, rbp = its RBP. */
    uintptr_t pc = st->pc, sp = st->cfa, rbp = st->rbp;
    int n = 0;
    for (;;) {
        pcs[n++] = pc;
        const hg_rule r = rule_get(c, tag, pc);
        if (hg_unlikely(r.flags & (RF_END | RF_UNSUP | RF_NOFDE))) {
            if (r.flags & RF_END) return n;
            if (r.flags & RF_UNSUP) break;
            /* No CFI: follow the frame-pointer chain, as libunwind guesses it
             * (RBP == SP is fine: a frame with no locals).  RBP == 0 is the
             * ABI's end-of-stack marker (e.g. ld.so's _dl_start_user running
             * constructors).  An RBP that does not point a little way up this
             * stack is left to libunwind's heuristics. */
            if (rbp == 0) return n;
            if (rbp < sp || rbp - sp > 0x4000) break;
        }
        const uintptr_t cfa = ((r.flags & RF_CFA_RBP) ? rbp : sp) + (uintptr_t)(intptr_t)r.cfa_off;
        if (hg_unlikely(cfa <= sp)) break;                      /* must strictly grow */
        const uintptr_t ra_at = cfa - 8;
        if (hg_unlikely(!slot_ok(ra_at, lo, hi))) break;
        if (r.flags & RF_RBP_SAVED) {
            const uintptr_t rbp_at = cfa + (uintptr_t)(intptr_t)r.rbp_off;
            if (hg_unlikely(!slot_ok(rbp_at, lo, hi))) break;
            rbp = *(const uintptr_t *)rbp_at;
        }
        pc = *(const uintptr_t *)ra_at;
        sp = cfa;
        if (pc == 0) return n;                                  /* outermost frame */
        if (n == max) { *truncated = 1; return n; }
    }
    atomic_fetch_add_explicit(&hg_fallbacks, 1, memory_order_relaxed);
    uint64_t *sink = atomic_load_explicit(&hg_fallback_sink, memory_order_relaxed);
    if (sink)
        __atomic_fetch_add(sink, 1, __ATOMIC_RELAXED);
    *truncated = 0;
    return unwind_slow(st, pcs, max, truncated);
}
