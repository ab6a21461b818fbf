/* unwind.c -- the shim's stack unwinder: cached CFI rules, no libunwind.
 *
 * Hot path: for each return address, one lookup in a lock-free hash table of
 * packed 8-byte rules ("CFA = RSP|RBP + off, RA at CFA-8, RBP at CFA+b"), two
 * bounds-checked stack loads, done.  The rules are derived on a miss from the
 * object's .eh_frame_hdr / .eh_frame (located with _dl_find_object, which is
 * lock-free), by running the CFA program up to the call instruction.
 *
 * The frames the hot loop does not take (signal frames, frames with no FDE
 * whose frame pointer is not an obvious one, memory outside the part of the
 * stack known to be mapped) go to walk_slow, which continues the same stack
 * frame by frame: rt_sigreturn trampolines are recognised by their bytes and
 * the interrupted registers read from the kernel's ucontext; frames without
 * CFI follow the frame pointer; every load outside the known stack goes
 * through process_vm_readv on ourselves, which fails instead of faulting.
 * Where nothing sound is left (a rule we cannot express, an unreadable slot)
 * the stack stops there and is reported cut short (counted).
 *
 * The outer frames a walk shares with the thread's last one are checked
 * instead of walked: see "The shadow of the last stack" below; and a stack
 * the thread walked before from the same start is checked whole: "The memo
 * of whole stacks".
 *
 * Why no libunwind: its memory validation opens a pipe inside the target and
 * reads and writes it, on descriptor numbers the program may later own.  This
 * file never opens, uses or closes a file descriptor, and never allocates.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#define hg_likely(x)   __builtin_expect(!!(x), 1)
#define hg_unlikely(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------------
 * Rules
 * ---------------------------------------------------------------------- */

enum {
    RF_CFA_RBP   = 1u << 0,   /* CFA = RBP + cfa_off (else RSP + cfa_off)      */
    RF_RBP_SAVED = 1u << 1,   /* caller's RBP at CFA + rbp_off (else unchanged) */
    RF_END       = 1u << 2,   /* RA undefined: outermost frame (_start, clone3) */
    RF_UNSUP     = 1u << 3,   /* not expressible here: the stack stops here     */
    RF_NOFDE     = 1u << 4,   /* no FDE covers the pc: frame-pointer guess      */
    RF_SIGNAL    = 1u << 5,   /* 'S' CIE: maybe a sigreturn trampoline          */
    RF_NOOBJ     = 1u << 6,   /* pc in no loaded object (JIT code or garbage)   */
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
/* No CFI for the pc: assume a frame-pointer frame (Swift emits no FDE for its
 * nounwind functions, but keeps frame pointers). */
static const hg_rule rule_nofde = { 16, -16, RF_CFA_RBP | RF_RBP_SAVED | RF_NOFDE, 0 };
/* Not in any object: the same guess, but walk_slow decides what to trust. */
static const hg_rule rule_noobj = { 16, -16, RF_CFA_RBP | RF_RBP_SAVED | RF_NOFDE | RF_NOOBJ, 0 };
static const hg_rule rule_signal = { 0, 0, RF_SIGNAL, 0 };
static const hg_rule rule_end = { 0, 0, RF_END, 0 };

/* A makecontext() coroutine's function returns into glibc's __start_context
 * (a local symbol): its frame holds that address as the return address,
 * though no call put it there, so pc-1 lies before that function's CFI and
 * the walk would be cut there. It is the context's outermost frame. Learnt
 * from makecontext itself, which writes it on the new context's stack. */
static uintptr_t start_context_ra;

static void learn_start_context(void) {
    static uint64_t stack[64];
    ucontext_t uc;
    if (getcontext(&uc) != 0) return;
    uc.uc_stack.ss_sp = stack;
    uc.uc_stack.ss_size = sizeof stack;
    uc.uc_link = NULL;
    makecontext(&uc, (void (*)(void))abort, 0);
    const uintptr_t sp = (uintptr_t)uc.uc_mcontext.gregs[REG_RSP];
    if (sp >= (uintptr_t)stack && sp + 8 <= (uintptr_t)stack + sizeof stack && (sp & 7) == 0)
        start_context_ra = *(const uintptr_t *)sp;
}

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
/* Stacks cut short (the unwinder could not go on) and stacks that needed
 * walk_slow; also counted into *hg_cut_sink, the shim's segment header, so
 * the collector sees them without a check on every allocation. */
static _Atomic uint64_t     hg_cut;
static _Atomic uint64_t     hg_slow;
static uint64_t *_Atomic    hg_cut_sink;

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

/* The entry a probe for `key` starts at: the byte offset straight from the
 * pc (shl+and, folded into the load's address) rather than index*16, one
 * op less on the per-frame chain. */
static inline const cache_entry *cache_home(const cache_entry *c, uintptr_t pc) {
    return (const cache_entry *)((const char *)c + (((size_t)pc << 4) & (CACHE_MASK << 4)));
}

/* Reads e's rule if e holds `key` (k, its key as just loaded with acquire),
 * seqlock-checked: false also when the slot was recycled under us. */
static inline bool cache_read(const cache_entry *e, uint64_t k, uint64_t key, hg_rule *out) {
    if (hg_unlikely(k != key)) return false;
    out->cfa_off = __atomic_load_n(&e->rule.r.cfa_off, __ATOMIC_RELAXED);
    out->rbp_off = __atomic_load_n(&e->rule.r.rbp_off, __ATOMIC_RELAXED);
    out->flags   = __atomic_load_n(&e->rule.r.flags, __ATOMIC_RELAXED);
    out->_pad = 0;
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    return hg_likely(__atomic_load_n(&e->key, __ATOMIC_RELAXED) == key);
}

static inline bool cache_get(cache_entry *c, uintptr_t pc, uint64_t key, hg_rule *out) {
    size_t off = (size_t)((const char *)cache_home(c, pc) - (const char *)c);
    for (int probe = 0; probe < CACHE_PROBES; probe++, off = (off + sizeof(cache_entry)) & (CACHE_MASK << 4)) {
        const cache_entry *e = (const cache_entry *)((const char *)c + off);
        uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
        if (hg_likely(k == key))
            return cache_read(e, k, key, out);  /* (false: recycled under us, recompute) */
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
    bool     signal;               /* 'S': the FDE describes a signal frame */
} cie_info;

/* Parse the CIE header; false if it is something we must not interpret
 * (old "eh" augmentation, RA column other than 16).  'S' (signal frame) is
 * reported in ci->signal: walk_slow handles those by their code bytes. */
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
    ci->signal = strchr(aug, 'S') != NULL;
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
    const uint8_t *expr;           /* DW_CFA_def_cfa_expression's block */
    uint64_t expr_len;
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
            n = uleb(&p);
            s->expr = p;
            s->expr_len = n;
            p += n;
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

/* A CFA expression that comes down to "RSP + constant" once the pc is known.
 * The linker's .plt entries say CFA = RSP + 8 + ((RIP & 15) >= 11) * 8 (>= 10
 * in IBT PLTs): a pc there is never a return address, but it is the
 * interrupted pc of many a signal frame.  Values are symbolic: a constant,
 * or RSP + a constant; anything else is refused. */
static bool cfa_expr_rsp_offset(const uint8_t *p, uint64_t len, uintptr_t ip, int64_t *off) {
    const uint8_t *end = p + len;
    struct { bool rsp; int64_t v; } st[8];
    int sp = 0;
    while (p < end) {
        const uint8_t op = *p++;
        if (op >= 0x30 && op <= 0x4f) {                        /* lit0..lit31 */
            if (sp == 8) return false;
            st[sp].rsp = false; st[sp++].v = op - 0x30;
            continue;
        }
        switch (op) {
        case 0x77: case 0x80:                                  /* breg7 (rsp), breg16 (rip) */
            if (sp == 8) return false;
            st[sp].rsp = op == 0x77;
            st[sp].v = sleb(&p) + (op == 0x80 ? (int64_t)ip : 0);
            sp++;
            continue;
        case 0x10:                                             /* constu */
            if (sp == 8) return false;
            st[sp].rsp = false; st[sp++].v = (int64_t)uleb(&p);
            continue;
        case 0x11:                                             /* consts */
            if (sp == 8) return false;
            st[sp].rsp = false; st[sp++].v = sleb(&p);
            continue;
        case 0x23:                                             /* plus_uconst */
            if (sp < 1) return false;
            st[sp - 1].v += (int64_t)uleb(&p);
            continue;
        default:
            break;
        }
        if (sp < 2) return false;
        const int64_t a = st[sp - 2].v, b = st[sp - 1].v;
        const bool ra = st[sp - 2].rsp, rb = st[sp - 1].rsp;
        sp--;
        if (op == 0x22) {                                      /* plus */
            if (ra && rb) return false;
            st[sp - 1].rsp = ra || rb;
            st[sp - 1].v = a + b;
            continue;
        }
        if (ra || rb) return false;                            /* only plus works on RSP */
        int64_t v;
        switch (op) {
        case 0x1a: v = a & b; break;                           /* and */
        case 0x1c: v = a - b; break;                           /* minus */
        case 0x1e: v = a * b; break;                           /* mul */
        case 0x21: v = a | b; break;                           /* or */
        case 0x24: v = b >= 0 && b < 64 ? (int64_t)((uint64_t)a << b) : 0; break;   /* shl */
        case 0x25: v = b >= 0 && b < 64 ? (int64_t)((uint64_t)a >> b) : 0; break;   /* shr */
        case 0x27: v = a ^ b; break;                           /* xor */
        case 0x29: v = a == b; break;                          /* eq */
        case 0x2a: v = a >= b; break;                          /* ge */
        case 0x2b: v = a > b; break;                           /* gt */
        case 0x2c: v = a <= b; break;                          /* le */
        case 0x2d: v = a < b; break;                           /* lt */
        case 0x2e: v = a != b; break;                          /* ne */
        default: return false;
        }
        st[sp - 1].rsp = false;
        st[sp - 1].v = v;
    }
    if (sp != 1 || !st[0].rsp) return false;
    *off = st[0].v;
    return true;
}

static hg_rule rule_from_state(cfa_state *s, uintptr_t ip) {
    hg_rule r = { 0, 0, 0, 0 };
    if (s->ra.how == RR_UNDEF) { r.flags = RF_END; return r; }
    if (s->cfa_expr) {
        int64_t off;
        if (!cfa_expr_rsp_offset(s->expr, s->expr_len, ip, &off)) return rule_unsup;
        s->cfa_expr = false;
        s->cfa_reg = DW_REG_RSP;
        s->cfa_off = off;
    }
    if (s->cfa_reg != DW_REG_RSP && s->cfa_reg != DW_REG_RBP) return rule_unsup;
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
    if (pc == start_context_ra && pc != 0) return rule_end;
    const uintptr_t ip = pc - 1;
    struct dl_find_object dlfo;
    /* Not in any object (JIT code?) or in one without .eh_frame_hdr: no CFI. */
    if (_dl_find_object((void *)ip, &dlfo) != 0) return rule_noobj;
    if (!dlfo.dlfo_eh_frame) return rule_nofde;
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
    if (ci.signal) return rule_signal;        /* its CFI is DWARF expressions on the ucontext */
    if (ci.has_z) { uint64_t alen = uleb(&p); p += alen; }

    cfa_state s;
    memset(&s, 0, sizeof s);
    s.cfa_reg = ~(uint64_t)0;
    if (!cfa_run(ci.insn, ci.end, &ci, start, ip, &s, NULL)) return rule_unsup;
    const cfa_state init = s;
    if (!cfa_run(p, end, &ci, start, ip, &s, &init)) return rule_unsup;
    return rule_from_state(&s, ip);
}

/* ------------------------------------------------------------------------
 * Setup and counters
 * ---------------------------------------------------------------------- */

/* How far below a stack's top the calling thread's SP may be for us to take
 * [SP, top) as that stack (see stack_bounds); set from RLIMIT_STACK. */
static uintptr_t hg_stack_cap = (uintptr_t)8 << 20;

int hg_unwind_init(void) {
    if (atomic_load_explicit(&hg_cache, memory_order_acquire)) return 0;
    /* getrlimit is one prlimit64 system call (no file is read). */
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0) {
        /* unlimited: glibc gives threads 32 MiB, and the main stack then sits
         * far above every mapping (legacy layout) */
        uintptr_t cap = rl.rlim_cur == RLIM_INFINITY ? (uintptr_t)32 << 20 : (uintptr_t)rl.rlim_cur;
        if (cap > ((uintptr_t)1 << 30)) cap = (uintptr_t)1 << 30;
        if (cap >= 65536) hg_stack_cap = cap;
    }
    learn_start_context();
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

uint64_t hg_unwind_cut_stacks(void) {
    return atomic_load_explicit(&hg_cut, memory_order_relaxed);
}

uint64_t hg_unwind_slow_stacks(void) {
    return atomic_load_explicit(&hg_slow, memory_order_relaxed);
}

void hg_unwind_set_fallback_sink(uint64_t *counter) {
    atomic_store_explicit(&hg_cut_sink, counter, memory_order_relaxed);
}

void hg_unwind_set_mode(int mode) {
    (void)mode;     /* only the CFI unwinder is left; see unwind.h */
}

int hg_unwind_get_mode(void) {
    return HG_UNWIND_FAST;
}

/* ------------------------------------------------------------------------
 * Stack bounds and safe loads
 *
 * Everything from a thread's current SP up to the top of the stack it runs
 * on is mapped and readable.  The top is found without asking glibc (its
 * pthread_getattr_np allocates, takes the thread's lock, and on the main
 * thread opens /proc/self/maps):
 *  - a glibc thread's stack lies right below its descriptor, pthread_self()
 *    (x86-64 keeps the TCB at the top of the stack block, static TLS between);
 *  - the main thread's stack ends just above __libc_stack_end, the SP at
 *    process entry (argv/envp follow, on the same mapping);
 *  - a handler on an alternate signal stack: sigaltstack(2) says where.
 * A candidate is taken only if SP is below it by at most the stack size
 * limit and every page from SP up to it is readable (checked once per page
 * with process_vm_readv, see adopt_top).  Anything else (a coroutine's
 * stack, say) is unknown: every load then goes through process_vm_readv,
 * which returns an error for unmapped memory instead of faulting.
 * ---------------------------------------------------------------------- */

extern void *__libc_stack_end;

/* This thread's own stack: [hg_vlo, hg_top) has been checked readable, page
 * by page (hg_vlo page-aligned; 0/0: nothing yet).  A thread's stack stays
 * mapped while the thread lives, and glibc's guard page (or the kernel's
 * guard gap below the main stack) is unreadable, so a range that passed
 * the check can only be the thread's own stack or memory adjoining it. */
static __thread uintptr_t hg_top __attribute__((tls_model("initial-exec")));
static __thread uintptr_t hg_vlo __attribute__((tls_model("initial-exec")));

#define PAGE 4096ul

static inline bool on_stack_below(uintptr_t sp, uintptr_t top) {
    return sp < top && top - sp <= hg_stack_cap;
}

/* Every page in [from, to) (page-aligned) readable?  One byte of each is
 * copied with process_vm_readv, 64 pages per call. */
static bool pages_readable(uintptr_t from, uintptr_t to) {
    char buf[64];
    struct iovec local = { buf, 0 }, remote[64];
    const long pid = (long)getpid();
    while (from < to) {
        unsigned long n = 0;
        for (; n < 64 && from < to; n++, from += PAGE)
            remote[n] = (struct iovec){ (void *)from, 1 };
        local.iov_len = n;
        if (syscall(SYS_process_vm_readv, pid, &local, 1L, remote, n, 0L) != (long)n) return false;
    }
    return true;
}

/* In a seccomp sandbox (sandbox.c) no system call of ours may run: pages
 * are not checked, memory off the known stack is not read (the stack is cut
 * there), and the alternate signal stack is not asked for. The main
 * thread's stack is taken unchecked: it is one mapping that grows down
 * from its top, and nothing else is mapped within the stack limit below it
 * (the kernel keeps that room for it), so an SP there has all of [SP, top)
 * mapped above it. */
static _Atomic bool hg_no_syscalls;

void hg_unwind_set_syscalls(int allowed) {
    atomic_store_explicit(&hg_no_syscalls, !allowed, memory_order_relaxed);
}

static inline uintptr_t main_stack_top(void) {
    return ((uintptr_t)__libc_stack_end | (PAGE - 1)) + 1;
}

/* Take `top` as the top of the stack SP runs on if [SP, top) is readable:
 * check the pages not checked before and remember the range. */
static bool adopt_top(uintptr_t sp, uintptr_t top) {
    if (!on_stack_below(sp, top)) return false;
    const uintptr_t from = sp & ~(PAGE - 1);
    const uintptr_t known = top == hg_top && hg_vlo ? hg_vlo : ((top - 1) & ~(PAGE - 1)) + PAGE;
    if (from < known) {
        if (hg_unlikely(atomic_load_explicit(&hg_no_syscalls, memory_order_relaxed))) {
            if (__libc_stack_end == NULL || top != main_stack_top()) return false;
        } else if (!pages_readable(from, known)) {
            return false;
        }
    }
    /* A handler may run between any two stores: it must never see a range
     * wider than what was checked (top first withdrawn, then the new low). */
    if (hg_top != top) {
        hg_top = 0;
        atomic_signal_fence(memory_order_seq_cst);
    }
    if (from < known) hg_vlo = from;
    atomic_signal_fence(memory_order_seq_cst);
    hg_top = top;
    return true;
}

/* The top of the stack SP runs on, or 0 if unknown.  *lo_out is set for an
 * alternate signal stack (the kernel's record: not cached, not checked). */
static uintptr_t __attribute__((noinline)) find_top(uintptr_t sp, uintptr_t *lo_out) {
    const uintptr_t self = (uintptr_t)pthread_self();
    if (adopt_top(sp, self)) return self;
    const uintptr_t main_top = main_stack_top();
    if (__libc_stack_end && adopt_top(sp, main_top)) return main_top;
    if (atomic_load_explicit(&hg_no_syscalls, memory_order_relaxed)) return 0;
    stack_t ss;
    if (syscall(SYS_sigaltstack, NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK) &&
        sp >= (uintptr_t)ss.ss_sp && sp < (uintptr_t)ss.ss_sp + ss.ss_size) {
        *lo_out = sp;
        return (uintptr_t)ss.ss_sp + ss.ss_size;
    }
    return 0;
}

/* hi of the readable range [sp, hi) of the stack SP runs on; 0: unknown.
 * The common case is two compares against this thread's checked range. */
static inline uintptr_t stack_hi(uintptr_t sp) {
    if (hg_likely(sp >= hg_vlo && sp < hg_top)) return hg_top;
    uintptr_t lo = 0;
    return find_top(sp, &lo);
}

/* An 8-byte stack slot we may read directly: aligned and inside [lo, hi).
 * (hi == 0, an unknown stack, admits nothing: written so it cannot wrap.) */
static inline bool slot_ok(uintptr_t a, uintptr_t lo, uintptr_t hi) {
    return (a & 7) == 0 && a >= lo && a < hi && hi - a >= 8;
}

/* Copy `len` bytes at `a` without faulting: false if any is unreadable. */
static bool __attribute__((noinline)) read_checked(uintptr_t a, void *out, size_t len) {
    if (atomic_load_explicit(&hg_no_syscalls, memory_order_relaxed)) return false;
    struct iovec local = { out, len }, remote = { (void *)a, len };
    return syscall(SYS_process_vm_readv, (long)getpid(), &local, 1L, &remote, 1L, 0L) == (long)len;
}

static inline bool load(uintptr_t a, uintptr_t lo, uintptr_t hi, uintptr_t *out) {
    if (hg_likely(slot_ok(a, lo, hi))) { *out = *(const uintptr_t *)a; return true; }
    return read_checked(a, out, sizeof *out);
}

/* ------------------------------------------------------------------------
 * Unwinding
 * ---------------------------------------------------------------------- */

static hg_rule __attribute__((noinline))
rule_miss(cache_entry *c, uint64_t key, uintptr_t pc) {
    hg_rule r = rule_compute(pc);
    if (c && (pc & ~KEY_PC_MASK) == 0) cache_put(c, pc, key, r);
    return r;
}

/* The rest of the probe chain, then the miss: out of line, so that the
 * walk loops keep only the home-slot hit (most lookups; callgrind: the
 * whole probe loop as a call was a third of the bench's unwinding). */
static hg_rule __attribute__((noinline))
rule_get_slow(cache_entry *c, uint64_t key, uintptr_t pc) {
    hg_rule r;
    if (c != NULL && cache_get(c, pc, key, &r))
        return r;
    return rule_miss(c, key, pc);
}

static inline __attribute__((always_inline)) hg_rule rule_get(cache_entry *c, uint64_t tag, uintptr_t pc) {
    const uint64_t key = pc | tag;
    hg_rule r;
    if (hg_likely(c != NULL)) {
        /* cache_get's first probe */
        const cache_entry *e = cache_home(c, pc);
        if (hg_likely(cache_read(e, __atomic_load_n(&e->key, __ATOMIC_ACQUIRE), key, &r)))
            return r;
    }
    return rule_get_slow(c, key, pc);
}

/* glibc's x86-64 __restore_rt: mov $15,%rax (rt_sigreturn); syscall. */
static const uint8_t sigreturn_code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* A frame-pointer guess (no CFI) is taken only if RBP points a little way up
 * the stack from the frame's SP: a frame without locals has RBP == SP, and no
 * frame holds more than this. */
#define FP_GUESS_MAX 0x100000

/* The walk's state between frames: frame n-1 has return address / pc `pc`,
 * its SP `sp` (the callee's CFA) and RBP `rbp`.  `exact`: pc is the
 * interrupted instruction itself (the frame above a signal frame), not a
 * return address, so its rule is the one at pc, not at pc-1.  `guessed`:
 * pc was read from a frame-pointer guess. */
typedef struct walk {
    uintptr_t pc, sp, rbp, lo, hi;
    bool exact, guessed;
} walk;

static void count_cut(void) {
    atomic_fetch_add_explicit(&hg_cut, 1, memory_order_relaxed);
    uint64_t *sink = atomic_load_explicit(&hg_cut_sink, memory_order_relaxed);
    if (sink) __atomic_fetch_add(sink, 1, __ATOMIC_RELAXED);
}

/* Continue the walk at frame n-1 (already in pcs), one frame at a time,
 * with every case and every load checked.  Returns the frame count. */
static int __attribute__((noinline))
walk_slow(cache_entry *c, uint64_t tag, walk w, uintptr_t *pcs, int n, int max, int *truncated) {
    atomic_fetch_add_explicit(&hg_slow, 1, memory_order_relaxed);
    for (;;) {
        const hg_rule r = rule_get(c, tag, w.exact ? w.pc + 1 : w.pc);
        if (r.flags & RF_END) return n;
        if (r.flags & RF_NOOBJ) {
            /* A pc in no object right after a frame-pointer guess: the guess
             * was wrong (RBP was a plain register there).  Drop it. */
            if (w.guessed) n--;
            break;
        }
        if (r.flags & RF_SIGNAL) {
            uint8_t code[sizeof sigreturn_code];
            if (!read_checked(w.pc, code, sizeof code) || memcmp(code, sigreturn_code, sizeof code) != 0)
                break;
            /* The handler returned here with SP at the kernel's ucontext. */
            const uintptr_t uc = w.sp;
            uintptr_t rip, rsp, rbp;
            if (!load(uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]), w.lo, w.hi, &rip) ||
                !load(uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]), w.lo, w.hi, &rsp) ||
                !load(uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]), w.lo, w.hi, &rbp))
                break;
            if (rip == 0) return n;
            w.pc = rip;
            w.sp = rsp;
            w.rbp = rbp;
            w.exact = true;
            w.guessed = false;
            /* The interrupted code may run on another stack (the handler on
             * an alternate one): bounds for the new SP. */
            if (!(rsp >= w.lo && rsp < w.hi)) {
                w.lo = rsp;
                w.hi = stack_hi(rsp);
            }
            pcs[n++] = rip;
            if (n == max) { *truncated = HG_UNWIND_TRUNC_MAX; return n; }
            continue;
        }
        if (r.flags & RF_UNSUP) break;
        if (r.flags & RF_NOFDE) {
            if (w.rbp == 0) return n;                   /* ABI end-of-stack marker */
            if (w.rbp < w.sp || w.rbp - w.sp > FP_GUESS_MAX) break;
        }
        const uintptr_t cfa = ((r.flags & RF_CFA_RBP) ? w.rbp : w.sp) + (uintptr_t)(intptr_t)r.cfa_off;
        if (cfa <= w.sp) break;                          /* must strictly grow */
        uintptr_t ra, rbp = w.rbp;
        if (!load(cfa - 8, w.lo, w.hi, &ra)) break;
        if ((r.flags & RF_RBP_SAVED) && !load(cfa + (uintptr_t)(intptr_t)r.rbp_off, w.lo, w.hi, &rbp)) break;
        if (ra == 0) return n;                          /* outermost frame */
        w.guessed = (r.flags & RF_NOFDE) != 0;
        w.exact = false;
        w.pc = ra;
        w.sp = cfa;
        w.rbp = rbp;
        pcs[n++] = ra;
        if (n == max) { *truncated = HG_UNWIND_TRUNC_MAX; return n; }
    }
    *truncated = HG_UNWIND_TRUNC_CUT;
    count_cut();
    return n;
}

/* One frame by its cached rule, in hg_unwind's loop: STEP_ON when the rule
 * takes the walk to a caller whose return-address slot (and saved-RBP slot,
 * if any) lies in the known stack, STEP_END at the outermost frame,
 * STEP_SLOW when the frame needs walk_slow. */
enum { STEP_ON, STEP_END, STEP_SLOW };

static inline uintptr_t rule_cfa(hg_rule r, uintptr_t sp, uintptr_t rbp) {
    return ((r.flags & RF_CFA_RBP) ? rbp : sp) + (uintptr_t)(intptr_t)r.cfa_off;
}

/* The walk loop's bounds: how many 8-byte slots from lo on lie inside
 * [lo, hi); 0 when hi is unknown (0), which admits nothing. */
static inline uintptr_t fast_slots(uintptr_t lo, uintptr_t hi) {
    return hi > lo ? (hi - lo) >> 3 : 0;
}

/* slot_ok for the walk loop, in one compare: an 8-byte slot at a, a - lo
 * a multiple of 8 and below slots * 8. Rotating the offset right by 3 puts
 * a misalignment into its top bits, so a misaligned slot compares as far
 * out of range (lo is a frame address: 16-aligned). */
static inline bool slot_in(uintptr_t a, uintptr_t lo, uintptr_t slots) {
    const uintptr_t off = a - lo;
    return ((off >> 3) | (off << 61)) < slots;
}

static inline int rule_step(hg_rule r, uintptr_t sp, uintptr_t rbp, uintptr_t lo, uintptr_t slots) {
    if (hg_unlikely(r.flags & (RF_END | RF_UNSUP | RF_NOFDE | RF_SIGNAL))) {
        if (r.flags & RF_END) return STEP_END;
        if (r.flags & (RF_UNSUP | RF_SIGNAL | RF_NOOBJ)) return STEP_SLOW;
        /* No CFI: follow the frame-pointer chain when RBP points a little
         * way up this stack (RBP == SP is fine: a frame with no locals).
         * RBP == 0 is the ABI's end-of-stack marker (e.g. ld.so's
         * _dl_start_user running constructors). */
        if (rbp == 0) return STEP_END;
        if (rbp < sp || rbp - sp > 0x4000) return STEP_SLOW;
    }
    const uintptr_t cfa = rule_cfa(r, sp, rbp);
    if (hg_unlikely(cfa <= sp)) return STEP_SLOW;                   /* must strictly grow */
    if (hg_unlikely(!slot_in(cfa - 8, lo, slots))) return STEP_SLOW;
    if ((r.flags & RF_RBP_SAVED) && hg_unlikely(!slot_in(cfa + (uintptr_t)(intptr_t)r.rbp_off, lo, slots)))
        return STEP_SLOW;
    return STEP_ON;
}

/* ------------------------------------------------------------------------
 * The shadow of the last stack (per thread)
 *
 * Consecutive allocations of a thread mostly share the outer part of their
 * stacks.  Each thread keeps the outermost SHADOW_MAX frames of its last
 * complete walk.  A frame's successor is a pure function of its state (pc,
 * SP = the callee's CFA, RBP), its rule (a pure function of pc within an
 * epoch) and the stack words the rule reads.  So when a walk reaches a frame
 * whose pc and SP equal a kept frame's (and whose RBP does, where the rest
 * depends on it), the rest of the stack is the kept one exactly if every
 * slot the walk from there would load still holds what it held: the return
 * address below each kept frame's SP, and the saved RBP where a frame
 * beyond depends on it.  Those addresses are known in advance, so they are
 * checked in one loop of independent loads, without a rule lookup and
 * without the walk's frame-after-frame wait for a rule and then for the
 * slot it names.  Any difference (a longjmp, a coroutine's other stack, a
 * frame reused by another call) hands the walk back to the rules at the
 * frame that joined.  Nothing is trusted that is not read again: the shadow
 * only saves rule lookups, so it is as sound as the walk itself.
 *
 * Which RBPs matter is worked out when frames are kept (shadow_fill): a
 * frame's RBP matters if its rule reads it, or if its step passes it on
 * unchanged to an outer frame whose RBP matters.  Only those are kept (see
 * fresh_frame).
 *
 * Cheap enough for every walk: looking for a join is one compare of SP per
 * frame, the kept frames stay where they are (outermost first), and only
 * the frames a walk took by rule are copied in when it completes (from
 * `fresh`, a ring of them by walk index).  Measured (program CPU, medians
 * of 7 interleaved rounds): 8-11-frame stacks no worse than rules only;
 * 22-25-frame stacks 0.509 -> 0.452 s against the previous shadow, which
 * only deep stacks used.
 *
 * Bounds: a kept slot was inside [lo, hi) of its walk; hi must be the same
 * (one stack), and the slots lie above the joined frame's SP, inside this
 * walk's [lo, hi) (a saved-RBP slot below its own frame's SP is not kept).
 * A dlclose bumps the epoch, which retires the shadow with the rule cache.
 *
 * Re-entrancy: a signal handler that interrupts hg_unwind on this thread
 * finds `busy` set and walks by rules only (it neither reads nor writes the
 * shadow).  Walks that end in walk_slow or at `max` are not kept (the last
 * one kept stays).
 *
 * Size: about 4.2 KiB per thread, with the memo about 11.3 KiB, in memory
 * the thread's owner attaches (hg_unwind_attach), not in static TLS.
 * ---------------------------------------------------------------------- */

/* 64, not 32: a stack kept whole can become a memo entry, and servers'
 * request paths and Swift code run 25-45 frames deep (bench, 25-28
 * frames: 2.54 -> 1.73 s; 41-44 frames: 3.70 -> 2.31 s, native 1.05 and
 * 1.53 s; a Swift test suite's time unchanged). */
#define SHADOW_MAX 64             /* a power of two: `fresh` is a ring */
#define MEMO_WAYS   8             /* memo entries per thread, direct-mapped by frame 0 */
#define MEMO_FRAMES 64            /* deepest stack a memo entry holds */
#define MEMO_CHECKS 72            /* its checks: frames, saved RBPs, the end (a multiple of 8) */
#define MEMO_HINTS  64            /* one cache line of entry numbers (memo_way) */
/* fresh.rbp_src's low bits (slot addresses are 8-aligned) and flags[]. */
#define SF_USES_RBP 1u          /* the frame's rule reads RBP (CFA = RBP + off, or no FDE) */
#define SF_RELEVANT 2u          /* flags[] only: the frames from this one outward depend on its RBP */

/* A frame as a walk takes it by rule. RBP only where the rule reads it
 * (then it is a frame pointer, into the stack): elsewhere RBP may hold any
 * value, a heap pointer among them, and a stale copy in TLS would be a
 * false root for the leak scan (heapgen record --leaks). */
typedef struct fresh_frame {
    uintptr_t pc, sp, rbp;
    uintptr_t rbp_src;          /* the slot its step loaded the caller's RBP from (0: passed on) | SF_USES_RBP */
} fresh_frame;

/* A whole stack of at most MEMO_FRAMES frames, by where it starts: frame 0's
 * pc and SP (the allocating call's return address and the allocator's CFA).
 * The same join as at frame 0 of the kept frames, with every check it needs
 * written out as a slot at a fixed offset from sp0 and the value it must
 * hold: first the return address of each frame i (its pc, val[i]; frame
 * 0's is the allocator's own, at sp0 - 8), then the saved RBPs that matter,
 * then the outermost frame's zero return address, if its step read one;
 * padded to whole groups of 8 with frame 0's check again, so that the loop
 * runs a group count that rarely changes between stacks of a thread (a
 * count of 8-11 frames varying from call to call cost a mispredicted loop
 * exit a walk). */
typedef struct memo_entry {
    uintptr_t rbp0;             /* frame 0's, compared when rbp0_matters    */
    uintptr_t hi;               /* top of the stack it was walked on        */
    uint32_t epoch;             /* hg_epoch it was walked in                */
    uint8_t n;                  /* frames; 0: empty                         */
    uint8_t rbp0_matters, groups;
    int32_t off[MEMO_CHECKS];   /* slot = sp0 + off[i]                      */
    uintptr_t val[MEMO_CHECKS]; /* val[0 .. n): the stack, as hg_unwind returns it */
    uint64_t user[2];           /* the caller's (hg_unwind_memo): cleared when rewritten */
} memo_entry;

/* The kept frames, outermost first (k = 0 is the outermost frame). To
 * follow them from frame j, every k < j must read as kept: the slot below
 * sp[k] still holds pc[k] (the return address the inner frame's step
 * loaded), and *chk[k] still holds rbp[k] (the RBP it loaded for frame k,
 * where frame k or a frame beyond depends on it; else chk[k] points at
 * rbp[k] itself: nothing to check, and the loop stays without a branch). */
typedef struct shadow_state {
    uint32_t busy;              /* an hg_unwind of this thread is using it */
    uint32_t n;                 /* frames kept */
    uint32_t epoch;             /* hg_epoch they were walked in */
    uintptr_t hi;               /* top of the stack they were checked against */
    const uintptr_t *end_chk;   /* the outermost frame's zero return-address slot (or a zero) */
    unsigned long joined, left; /* walks that joined the kept frames / found a slot that differed */
    /* pc[k] is rpc[SHADOW_MAX - 1 - k]: kept innermost first, so that the
     * pcs a join takes are one copy in the order hg_unwind returns them. */
    uintptr_t rpc[SHADOW_MAX];
    uintptr_t sp[SHADOW_MAX], rbp[SHADOW_MAX];
    const uintptr_t *chk[SHADOW_MAX];
    uint8_t flags[SHADOW_MAX];
    fresh_frame fresh[SHADOW_MAX];  /* this walk's frames by walk index, a ring */
    unsigned long memo_hits, memo_left; /* walks answered by a memo entry / that found one's slots changed */
    /* The memo's keys apart, in two cache lines, for the lookup: entry w
     * starts at pc memo_pc[w] with SP memo_sp[w] (0: empty). */
    uintptr_t memo_pc[MEMO_WAYS], memo_sp[MEMO_WAYS];
    uint32_t memo_rand;             /* picks the entry a new stack replaces */
    uint8_t memo_hint[MEMO_HINTS];  /* by memo_hash of a start: the entry last seen there */
    memo_entry memo[MEMO_WAYS];
} shadow_state;

/* The calling thread's shadow and memo, in memory its owner attached
 * (hg_unwind_attach; NULL: none, walks use rules only). Not static TLS:
 * glibc carves static TLS out of every thread's stack, and a thread made
 * with a 16 KiB stack crashed in its own code with ~5 KiB of it ours. */
static __thread shadow_state *hg_shadow __attribute__((tls_model("initial-exec")));

_Static_assert(sizeof(shadow_state) <= HG_UNWIND_THREAD_BYTES, "HG_UNWIND_THREAD_BYTES too small");

__thread uint32_t *hg_unwind_busy __attribute__((tls_model("initial-exec")));

void hg_unwind_attach(void *state) {
    shadow_state *K = (shadow_state *)state;
    if (K != NULL) memset(K, 0, sizeof *K);
    atomic_signal_fence(memory_order_seq_cst);
    hg_shadow = K;
    hg_unwind_busy = K != NULL ? &K->busy : NULL;
}
static _Atomic int hg_shadow_off;
static const uintptr_t shadow_zero = 0;

void hg_unwind_set_shadow(int on) {
    atomic_store_explicit(&hg_shadow_off, !on, memory_order_relaxed);
}

int hg_unwind_get_shadow(void) {
    return !atomic_load_explicit(&hg_shadow_off, memory_order_relaxed);
}

void hg_unwind_shadow_stats(unsigned long *joined, unsigned long *left) {
    *joined = hg_shadow ? hg_shadow->joined : 0;
    *left = hg_shadow ? hg_shadow->left : 0;
}

#define FRESH(K, i) ((K)->fresh[(uint32_t)(i) & (SHADOW_MAX - 1)])

static inline fresh_frame fresh_of(hg_rule r, uintptr_t pc, uintptr_t sp, uintptr_t rbp, uintptr_t rbp_at) {
    const bool uses = (r.flags & (RF_CFA_RBP | RF_NOFDE)) != 0;
    return (fresh_frame){ pc, sp, uses ? rbp : 0,
                          ((r.flags & RF_RBP_SAVED) ? rbp_at : 0) | (uses ? SF_USES_RBP : 0) };
}

/* Keeps frames k = from .. n - 1 out of walk frames: frame k is walk frame
 * top - k. Outermost first, since a frame's relevance follows from its outer
 * neighbour's; and frame k's step is where frame k - 1's RBP came from, so
 * it also fixes chk[k - 1] (the innermost kept frame has none: a join
 * compares its RBP itself). */
static void shadow_fill(shadow_state *K, int from, int n, int top) {
    if (from > 0) K->chk[from - 1] = &K->rbp[from - 1];
    for (int k = from; k < n; k++) {
        const fresh_frame *f = &FRESH(K, top - k);
        const bool outer_relevant = k > 0 && (K->flags[k - 1] & SF_RELEVANT);
        const uintptr_t src = f->rbp_src & ~(uintptr_t)SF_USES_RBP;
        if (outer_relevant && src != 0) {
            if (hg_unlikely(src < f->sp)) {
                /* A saved-RBP slot below its frame's SP (CFI no compiler
                 * writes): a join further in would read it unchecked. */
                n = k;
                break;
            }
            K->chk[k - 1] = (const uintptr_t *)src;
        }
        const bool uses = (f->rbp_src & SF_USES_RBP) != 0;
        /* Passed on unchanged (not reloaded) to an outer frame that depends
         * on it: then it is that frame's. */
        const bool passed = outer_relevant && src == 0;
        K->rpc[SHADOW_MAX - 1 - k] = f->pc;
        K->sp[k] = f->sp;
        K->rbp[k] = uses ? f->rbp : passed ? K->rbp[k - 1] : 0;
        K->flags[k] = (uint8_t)((uses ? SF_USES_RBP : 0) | (uses || passed ? SF_RELEVANT : 0));
        K->chk[k] = &K->rbp[k];
    }
    K->n = (uint32_t)n;
}

/* A walk of n frames completed by rule (the last one's step loaded a zero
 * return address from end_ra_at, or its rule ended the stack: 0): its
 * outermost SHADOW_MAX frames are kept. */
static void shadow_replace(shadow_state *K, int n, uint32_t epoch, uintptr_t hi, uintptr_t end_ra_at) {
    K->epoch = epoch;
    K->hi = hi;
    K->end_chk = end_ra_at != 0 ? (const uintptr_t *)end_ra_at : &shadow_zero;
    shadow_fill(K, 0, n < SHADOW_MAX ? n : SHADOW_MAX, n - 1);
}

/* The fresh frames of a walk that joined the kept frames at f[j] as its
 * frame `at` and found every kept slot as it was: they go below frame j, as
 * many as fit. */
static void shadow_splice(shadow_state *K, int j, int at) {
    const int n = j + 1 + at < SHADOW_MAX ? j + 1 + at : SHADOW_MAX;
    shadow_fill(K, j + 1, n, at + j);
}

/* ------------------------------------------------------------------------
 * The memo of whole stacks (per thread)
 *
 * The shadow keeps one stack; a thread that allocates from a handful of
 * sites in turn (a request path, a loop body) joins it only where the
 * stacks meet, and walks the frames inside by rules every time.  The memo
 * keeps MEMO_WAYS complete stacks of up to MEMO_FRAMES frames, each under
 * its starting frame (pc, SP): a walk whose start equals an entry's is
 * that entry's join at frame 0, every slot it depends on checked in one
 * loop of independent loads, and no frame walked. Measured (program CPU,
 * medians of 5 interleaved rounds): the 8-11-frame bench 1.58 -> 1.16 s.
 * An entry is a copy of the kept frames after a complete walk (memo_store),
 * so it is exactly as sound as the shadow's join.  Its user words carry the stack store's ref
 * for the stack (hg_unwind_memo), so a hit also skips interning.
 *
 * Size: MEMO_WAYS * ~900 bytes beside the shadow.
 * ---------------------------------------------------------------------- */

static _Atomic int hg_memo_off;

void hg_unwind_set_memo(int on) {
    atomic_store_explicit(&hg_memo_off, !on, memory_order_relaxed);
}

/* The entry that starts at (pc, sp), or -1, by comparing every entry's
 * start. Fully associative: a thread allocating from a few sites in turn
 * keeps them all (direct-mapped, four stacks shared eight entries with a
 * collision more often than not). */
static inline int memo_scan(const shadow_state *K, uintptr_t pc, uintptr_t sp) {
    /* A mask, not a branch an entry: with a few stacks in turn, which entry
     * matches is what a branch cannot predict (the branches drew half of the
     * lookup's samples; the bench's time is the same within noise). */
    uint32_t m = 0;
    for (int i = 0; i < MEMO_WAYS; i++)
        m |= (uint32_t)((K->memo_sp[i] == sp) & (K->memo_pc[i] == pc)) << i;
    return m != 0 ? __builtin_ctz(m) : -1;
}

static inline unsigned memo_hash(uintptr_t pc, uintptr_t sp) {
    return (unsigned)(((pc ^ (sp << 7)) * 0x9e3779b97f4a7c15ull) >> 58);
}

/* memo_scan's answer, most often from the hint of where the start was
 * found last: one entry compared, not eight (the scan was 57 of a memo
 * hit's ~260 instructions). A hint is only a guess, checked like a scan's
 * match; a wrong one costs the scan. */
static inline int memo_way(shadow_state *K, uintptr_t pc, uintptr_t sp) {
    const unsigned h = memo_hash(pc, sp);
    const int w = K->memo_hint[h];
    if (hg_likely((K->memo_pc[w] == pc) & (K->memo_sp[w] == sp)))
        return w;
    const int f = memo_scan(K, pc, sp);
    if (f >= 0)
        K->memo_hint[h] = (uint8_t)f;
    return f;
}

/* The entry a new stack starting at (pc, sp) goes to: the one it had, an
 * empty one, else one at random (a thread cycling through more stacks
 * than entries still keeps some, where replacing the oldest keeps none). */
static inline int memo_victim(shadow_state *K, uintptr_t pc, uintptr_t sp) {
    int w = memo_scan(K, pc, sp);
    for (int i = 0; i < MEMO_WAYS && w < 0; i++)
        if (K->memo_pc[i] == 0) w = i;
    if (w < 0) {
        uint32_t x = K->memo_rand + 0x9e3779b9u;
        K->memo_rand = x;
        w = (int)((x ^ (x >> 15)) * 0x2c1b3c6du >> 29) & (MEMO_WAYS - 1);
    }
    return w;
}

/* The stack of walk start st if entry e, which starts there too, still
 * holds: its frame count (the frames are e->val), else 0. */
static inline __attribute__((always_inline))
int memo_find(shadow_state *K, const memo_entry *e, const hg_unwind_start *st,
                            int max, uint32_t epoch, uintptr_t hi) {
    if (e->epoch != epoch || e->hi != hi || (int)e->n > max || (e->rbp0_matters && e->rbp0 != st->rbp))
        return 0;
    const uintptr_t sp0 = st->cfa;
    uintptr_t d = 0;
    for (int g = 0; g < e->groups * 8; g += 8)
        for (int i = g; i < g + 8; i++)
            d |= *(const uintptr_t *)(sp0 + (intptr_t)e->off[i]) ^ e->val[i];
    if (d != 0) {
        K->memo_left++;
        return 0;
    }
    K->memo_hits++;
    return e->n;
}

/* After a complete walk of n frames that the shadow kept whole: the kept
 * frames become the memo entry of its start. The entry, or NULL when the
 * stack does not fit one. */
static memo_entry *memo_store(shadow_state *K, int n, uint32_t epoch, uintptr_t hi) {
    if ((int)K->n != n || n > MEMO_FRAMES || hi - K->sp[n - 1] > INT32_MAX ||
        atomic_load_explicit(&hg_memo_off, memory_order_relaxed))
        return NULL;
    const int j = n - 1;   /* kept frame j is walk frame 0 */
    const uintptr_t sp0 = K->sp[j];
    const int w = memo_victim(K, K->rpc[SHADOW_MAX - 1 - j], sp0);
    memo_entry *e = &K->memo[w];
    K->memo_pc[w] = 0;   /* (being rewritten) */
    e->n = 0;
    /* Frame i = j - k's return address lies below kept frame k's SP. */
    memcpy(e->val, &K->rpc[SHADOW_MAX - n], (size_t)n * sizeof e->val[0]);
    for (int k = 0; k <= j; k++)
        e->off[j - k] = (int32_t)(K->sp[k] - 8 - sp0);
    int c = n;
    for (int k = 0; k < j; k++) {
        if (K->chk[k] != &K->rbp[k]) {
            if (c == MEMO_CHECKS - 1) return NULL;   /* (left empty) */
            e->off[c] = (int32_t)((uintptr_t)K->chk[k] - sp0);
            e->val[c++] = K->rbp[k];
        }
    }
    if (K->end_chk != &shadow_zero) {
        e->off[c] = (int32_t)((uintptr_t)K->end_chk - sp0);
        e->val[c++] = 0;
    }
    for (; c % 8 != 0; c++) {
        e->off[c] = -8;
        e->val[c] = e->val[0];
    }
    e->groups = (uint8_t)(c / 8);
    e->rbp0 = K->rbp[j];
    e->rbp0_matters = (K->flags[j] & SF_RELEVANT) != 0;
    e->hi = hi;
    e->epoch = epoch;
    e->user[0] = e->user[1] = 0;
    e->n = (uint8_t)n;
    K->memo_sp[w] = sp0;
    K->memo_pc[w] = e->val[0];
    K->memo_hint[memo_hash(e->val[0], sp0)] = (uint8_t)w;
    return e;
}

/* The walk's hold on the shadow ends: a signal handler's walk may use it. */
static inline void shadow_release(shadow_state *K) {
    atomic_signal_fence(memory_order_seq_cst);
    K->busy = 0;
}

/* hg_unwind_memo past its memo look-up (none of the thread's entries
 * holds, or it could not look): the walk, into pcs. When the walk leaves a
 * new memo entry, *user points at its words as for a hit. Out of line, so
 * that a hit keeps a small frame of its own (the walk's saves and spills
 * were half of a hit's instructions). */
static int __attribute__((noinline))
unwind_walk(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated, uint64_t **user,
            const uintptr_t **frames) {
    *truncated = 0;
    *user = NULL;
    *frames = pcs;
    if (max <= 0 || st->pc == 0) return 0;
    if (max > HG_UNWIND_MAX_FRAMES) max = HG_UNWIND_MAX_FRAMES;

    cache_entry *c = atomic_load_explicit(&hg_cache, memory_order_acquire);
    if (hg_unlikely(c == NULL)) {
        hg_unwind_init();
        c = atomic_load_explicit(&hg_cache, memory_order_acquire);
    }
    /* Our own frame is mapped, and so is everything above it on this stack. */
    const uintptr_t lo = (uintptr_t)__builtin_frame_address(0);
    const uintptr_t hi = stack_hi(lo);
    const uintptr_t slots = fast_slots(lo, hi);
    const uint32_t epoch = atomic_load_explicit(&hg_epoch, memory_order_relaxed);
    const uint64_t tag = (uint64_t)(epoch & 0xffff) << KEY_PC_BITS;
    int n = 0;

    /* The shadow: K is NULL when a walk of this thread is already using it
     * (we interrupted it) or it is off; j is the kept frame to compare
     * with next, innermost first (-1: none left, or one differed). */
    shadow_state *K = hg_shadow;
    memo_entry *memo = NULL;
    int j = -1;
    if (hg_likely(K != NULL && !K->busy) && !atomic_load_explicit(&hg_shadow_off, memory_order_relaxed)) {
        K->busy = 1;
        atomic_signal_fence(memory_order_seq_cst);
        if (K->n != 0 && K->epoch == epoch && K->hi == hi) j = (int)K->n - 1;
    } else {
        K = NULL;
    }

    /* Frame n: pc = its return address, sp = the callee's CFA, rbp = its RBP. */
    uintptr_t pc = st->pc, sp = st->cfa, rbp = st->rbp;
    bool guessed = false;
    for (;;) {
        pcs[n] = pc;
        if (j >= 0) {
            /* Kept frames lie at rising SPs outward, as ours do: skip those
             * below this one. */
            while (j >= 0 && K->sp[j] < sp) j--;
            if (j >= 0 && K->sp[j] == sp && K->rpc[SHADOW_MAX - 1 - j] == pc) {
                K->joined++;
                if (!(K->flags[j] & SF_RELEVANT) || rbp == K->rbp[j]) {
                    /* The kept frames the walk takes (j - 1 down to j - m:
                     * all, or as many as `max` leaves room for), checked:
                     * every slot the walk from here would load, against what
                     * it held. Independent loads, one branch. */
                    const int m = j < max - 1 - n ? j : max - 1 - n;
                    uintptr_t d = m == j ? *K->end_chk : 0;
                    for (int k = j - m; k < j; k++)
                        d |= (*(const uintptr_t *)(K->sp[k] - 8) ^ K->rpc[SHADOW_MAX - 1 - k]) |
                             (*K->chk[k] ^ K->rbp[k]);
                    if (d == 0) {
                        memcpy(&pcs[n + 1], &K->rpc[SHADOW_MAX - j], (size_t)m * sizeof *pcs);
                        n += m + 1;
                        if (m < j) {
                            *truncated = HG_UNWIND_TRUNC_MAX;   /* (not kept) */
                            goto out;
                        }
                        shadow_splice(K, j, n - 1 - j);
                        memo = memo_store(K, n, epoch, hi);
                        goto out;
                    }
                }
                K->left++;
                j = -1;                 /* frame n differs from here on: rules */
            }
        }
        const hg_rule r = rule_get(c, tag, pc);
        const int how = rule_step(r, sp, rbp, lo, slots);
        if (hg_unlikely(how != STEP_ON)) {
            if (how == STEP_SLOW) break;
            n++;
            if (K != NULL) {
                FRESH(K, n - 1) = fresh_of(r, pc, sp, rbp, 0);
                shadow_replace(K, n, epoch, hi, 0);
                memo = memo_store(K, n, epoch, hi);
            }
            goto out;
        }
        const uintptr_t cfa = rule_cfa(r, sp, rbp);
        const uintptr_t ra_at = cfa - 8;
        const uintptr_t rbp_at = cfa + (uintptr_t)(intptr_t)r.rbp_off;
        if (K != NULL) FRESH(K, n) = fresh_of(r, pc, sp, rbp, rbp_at);
        if (r.flags & RF_RBP_SAVED) rbp = *(const uintptr_t *)rbp_at;
        pc = *(const uintptr_t *)ra_at;
        sp = cfa;
        guessed = (r.flags & RF_NOFDE) != 0;
        n++;
        if (pc == 0) {                                          /* outermost frame */
            if (K != NULL) {
                shadow_replace(K, n, epoch, hi, ra_at);
                memo = memo_store(K, n, epoch, hi);
            }
            goto out;
        }
        if (n == max) { *truncated = HG_UNWIND_TRUNC_MAX; goto out; }
    }
    {
        /* Frame n needs more than the loop does: redo it, checked. */
        const walk w = { pc, sp, rbp, lo, hi, false, guessed };
        n = walk_slow(c, tag, w, pcs, n + 1, max, truncated);
    }
out:
    if (memo != NULL) {
        *user = memo->user;     /* busy until hg_unwind_memo_done */
        return n;
    }
    if (K != NULL) shadow_release(K);
    return n;
}

/* The one look-up of the memo: a hit answers here, in a small frame,
 * anything else is unwind_walk's. */
int hg_unwind_memo(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated, uint64_t **user,
                   const uintptr_t **frames) {
    shadow_state *K = hg_shadow;
    if (hg_likely(K != NULL && !K->busy && max > 0 && st->pc != 0) &&
        hg_likely(atomic_load_explicit(&hg_cache, memory_order_relaxed) != NULL) &&
        !atomic_load_explicit(&hg_shadow_off, memory_order_relaxed)) {
        K->busy = 1;
        atomic_signal_fence(memory_order_seq_cst);
        const int w = memo_way(K, st->pc, st->cfa);
        if (w >= 0) {
            const uintptr_t hi = stack_hi((uintptr_t)__builtin_frame_address(0));
            const uint32_t epoch = atomic_load_explicit(&hg_epoch, memory_order_relaxed);
            memo_entry *e = &K->memo[w];
            const int n = memo_find(K, e, st, max < HG_UNWIND_MAX_FRAMES ? max : HG_UNWIND_MAX_FRAMES,
                                    epoch, hi);
            if (n != 0) {
                *truncated = 0;
                *user = e->user;        /* busy until hg_unwind_memo_done */
                *frames = e->val;
                return n;
            }
        }
        shadow_release(K);
    }
    return unwind_walk(st, pcs, max, truncated, user, frames);
}

/* hg_unwind_memo with the frames always in pcs and nothing held. */
int hg_unwind(const hg_unwind_start *st, uintptr_t *pcs, int max, int *truncated) {
    uint64_t *user;
    const uintptr_t *frames;
    const int n = hg_unwind_memo(st, pcs, max, truncated, &user, &frames);
    if (user != NULL) {
        if (frames != pcs)
            memcpy(pcs, frames, (size_t)n * sizeof *pcs);
        hg_unwind_memo_done();
    }
    return n;
}

void hg_unwind_memo_stats(unsigned long *hits, unsigned long *left) {
    *hits = hg_shadow ? hg_shadow->memo_hits : 0;
    *left = hg_shadow ? hg_shadow->memo_left : 0;
}
