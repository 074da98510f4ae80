"""The breadth-first search of the native engine, in C: the fixed part of every compiled model.

ownership.interpret.native_source puts it after a model's expand and check_state functions:
the states in discovery order with their parent and binding, the visited set as an
open-addressing table of state ids, the successors of a batch of parents expanded ahead, the
store and the table counted exactly and grown by what fits under --max-memory (NOTE(memory)),
and the entry points (ownership_new, ownership_run, ...) that ownership.engines.native calls
through ctypes a time slice at a time.
"""

#: The search: the per-state engine's breadth-first order (ownership.engines.per_state), its
#: NOTE(first-event) rule and its counts, over packed states. Status codes: see STATUS.
SEARCH = r"""
/* A successor of a parent of the batch: the words and hash of a step, or a spec error. */
struct succ { u64 w[WORDS]; u64 h; u64 stab; int32_t b; int8_t error; int8_t flag; };

struct search {
    u64 *states;          /* n x WORDS, in discovery order */
    int32_t *parent;      /* the state a state was first reached from (-1: the initial one) */
    /* (the binding that reached a state is not stored: ownership_via finds it again) */
    int64_t *level;       /* level[d]: the first state of depth d (states are stored by depth) */
    int64_t top;          /* the deepest depth stored */
    int64_t n, cap;       /* states stored (the visited set), room for */
    uint32_t *table;      /* open addressing: state id + 1, 0 empty */
    u64 tsize;            /* the table's slots: any number (NOTE(memory)); slot() maps a hash */
    u64 tgrow;            /* the table grows when this many states are stored */
    int64_t head, head_depth, transitions, deepest_done;
    int64_t max_states, max_depth;   /* -1: none */
    int64_t max_bytes;    /* what the store and the table may take (-1: no limit): NOTE(memory) */
    int64_t failed_depth, failed_at, failed_b;  /* a pending spec error (NOTE(first-event)) */
    int64_t event_at, event_b;       /* a violation: of the step (parent, binding), or of a state */
    u64 pending, reached;            /* sometimes properties not reached yet, reached */
    u64 represented;      /* under symmetry: the states the stored representatives stand for */
    u64 *last;            /* the successor that violated (WORDS) */
    struct succ *buf;     /* the successors of a batch of parents, in order */
    int64_t nbuf;
    int64_t *starts;      /* starts[k]: the first successor of the batch's k-th parent in buf */
    int64_t fired[BINDINGS];  /* transitions per binding (the actions' coverage) */
};

/* Parents expanded ahead of the inserts, so that the visited table and the store can be
   fetched from memory ahead of use (NOTE(prefetch)); AHEAD successors ahead for the table,
   AHEAD / 2 for the stored state a table slot names. */
#define BATCH (BINDINGS >= 4096 ? 1 : (4096 / BINDINGS > 64 ? 64 : 4096 / BINDINGS))
#define AHEAD 16

static inline u64 mix(u64 h) {
    h ^= h >> 33; h *= 0xff51afd7ed558ccdULL; h ^= h >> 33; h *= 0xc4ceb9fe1a85ec53ULL; h ^= h >> 33;
    return h;
}
static inline u64 hash_words(const u64 *w) {
    u64 h = 0x9e3779b97f4a7c15ULL;
    for (int i = 0; i < WORDS; i++) h = mix(h ^ (w[i] + 0x9e3779b97f4a7c15ULL * (u64)(i + 1)));
    return h;
}
/* NOTE(huge-pages): the table and the store are read at random; in 2 MiB pages (where the
   kernel has them, on request) a read rarely misses the TLB as well as the cache. The advice
   covers the whole pages of the block, its allocator's header included: advising only the
   pages inside it split the block's mapping in three, and the mremap that realloc grows a
   large block with failed (EFAULT), so every growth of the store copied it, old and new held
   at once (0.16 of --max-memory above the limit once the store grew by what fit, issue 29). */
static void advise_huge(void *p, size_t bytes) {
#ifdef MADV_HUGEPAGE
    uintptr_t lo = (uintptr_t)p & ~(uintptr_t)4095, hi = ((uintptr_t)p + bytes + 4095) & ~(uintptr_t)4095;
    if (bytes >= (1u << 21) && hi > lo) madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p; (void)bytes;
#endif
}
/* NOTE(memory): the bytes the store and the table hold: a state's words and parent per slot of
   the store, 4 bytes per slot of the table. A growth that would pass max_bytes (while a table
   grows, the old one and the new one are both held) is refused, and the search stops with
   what it found (status 7), before the process takes the memory. Near the limit the store
   grows by what still fits rather than doubling, and a table that cannot double fills up to
   TABLE_FULL of its slots (linear probing stays correct, only slower): doubling alone stopped
   the search at 0.79 of --max-memory 1G (issue 29). */
#define TABLE_FULL_TENTHS 9
static int64_t held_bytes(const struct search *S) {
    return S->cap * (int64_t)(WORDS * 8 + 4) + (int64_t)S->tsize * 4;
}
/* The store's arrays and the table are mapped by the search itself where the system can
   (Linux: mmap, mremap: a growth copies nothing, and nothing freed stays resident); elsewhere
   calloc and realloc. Through malloc the parents' array and the tables below the mmap
   threshold that the ownership command sets (NOTE(first-touch) in ownership.engines.memory)
   stayed resident once freed, never trimmed: 35 MB past the held bytes, 3% over
   --max-memory 300M (issue 29). Both ways the memory reads as zeros
   (a new mapping, calloc): the table needs it. */
static void *store_alloc(size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    void *p = mmap(0, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? 0 : p;
#else
    return calloc(1, bytes);   /* (zeros, as a new mapping reads) */
#endif
}
static void *store_grow(void *p, size_t old, size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    void *q = mremap(p, old, bytes, MREMAP_MAYMOVE);
    return q == MAP_FAILED ? 0 : q;
#else
    (void)old;
    return realloc(p, bytes);
#endif
}
static void store_free(void *p, size_t bytes) {
#if defined(__linux__) && defined(MREMAP_MAYMOVE)
    if (p) munmap(p, bytes);
#else
    (void)bytes;
    free(p);
#endif
}
/* A hash's slot in a table of `size` slots: the high half of hash * size (any size, not
   only a power of two, so that a table near the memory limit grows by what fits). */
static inline u64 slot(u64 hash, u64 size) { return (u64)(((unsigned __int128)hash * size) >> 64); }
static inline u64 next_slot(u64 h, u64 size) { return h + 1 == size ? 0 : h + 1; }
/* The table grows to twice its slots when half full; where that would pass max_bytes, to as
   many as fit while they keep it at most TABLE_FULL_TENTHS full (and then grows again only
   when it is that full); else it fails (7). */
static int grow_table(struct search *S) {
    u64 size = S->tsize * 2, least = (u64)S->n * 10 / TABLE_FULL_TENTHS + 1;
    if (S->max_bytes >= 0) {
        int64_t room = (S->max_bytes - held_bytes(S)) / 4;   /* (the old table is held while the new fills) */
        if ((int64_t)size > room) size = room > 0 ? (u64)room : 0;
        if (size < least || size <= S->tsize) return 7;
    }
    uint32_t *t = (uint32_t *)store_alloc(size * sizeof(uint32_t));
    if (!t) return 7;
    advise_huge(t, size * sizeof(uint32_t));
    u64 ring[16];   /* the slots of the next 16 states, fetched ahead (NOTE(prefetch)) */
    for (int64_t id = 0; id < S->n + 16; id++) {
        if (id >= 16) {   /* (the slot of state id - 16 first: state id's takes its place) */
            u64 h = ring[id & 15];
            while (t[h]) h = next_slot(h, size);
            t[h] = (uint32_t)(id - 16 + 1);
        }
        if (id < S->n) {
            u64 h = slot(hash_words(S->states + id * WORDS), size);
            __builtin_prefetch(&t[h], 1);
            ring[id & 15] = h;
        }
    }
    store_free(S->table, S->tsize * sizeof(uint32_t)); S->table = t;
    S->tgrow = size >= 2 * (u64)S->n ? size / 2 : size * TABLE_FULL_TENTHS / 10;
    S->tsize = size;
    return 0;
}
static int grow_states(struct search *S) {
    int64_t add = S->cap;
    if (S->max_bytes >= 0) {   /* (as many slots as fit, up to twice the store: NOTE(memory)) */
        int64_t room = (S->max_bytes - held_bytes(S)) / (int64_t)(WORDS * 8 + 4);
        if (room < add) add = room;
        if (add < 1024) return 7;
    }
    int64_t cap = S->cap + add;
    u64 *st = (u64 *)store_grow(S->states, (size_t)S->cap * WORDS * sizeof(u64), (size_t)cap * WORDS * sizeof(u64));
    if (!st) return 7;
    S->states = st;
    advise_huge(st, (size_t)cap * WORDS * sizeof(u64));
    int32_t *pa = (int32_t *)store_grow(S->parent, (size_t)S->cap * sizeof(int32_t), (size_t)cap * sizeof(int32_t));
    if (!pa) { S->states = (u64 *)store_grow(st, (size_t)cap * WORDS * sizeof(u64), (size_t)S->cap * WORDS * sizeof(u64)); return 7; }
    S->parent = pa;
    S->cap = cap;
    return 0;
}
static int64_t depth_of(const struct search *S, int64_t id) {
    int64_t lo = 0, hi = S->top;   /* the last depth whose first state is <= id */
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (S->level[mid] <= id) lo = mid; else hi = mid - 1;
    }
    return lo;
}
/* -1: stored already; else the new state's id (or -(rc+2) when memory ran out) */
static int64_t insert(struct search *S, const u64 *w, u64 hash, int64_t parent, int b, int64_t d) {
    u64 h = slot(hash, S->tsize);
    for (;;) {
        uint32_t e = S->table[h];
        if (!e) break;
        const u64 *s = S->states + (int64_t)(e - 1) * WORDS;
        int same = 1;
        for (int i = 0; i < WORDS; i++) same &= (s[i] == w[i]);
        if (same) return -1;
        h = next_slot(h, S->tsize);
    }
    if (S->n >= 2147483647LL) return -9;   /* (parents are kept in 31 bits) */
    if (S->n == S->cap && grow_states(S)) return -9;
    int64_t id = S->n++;
    memcpy(S->states + id * WORDS, w, WORDS * sizeof(u64));
    S->parent[id] = (int32_t)parent; (void)b;
    if (d > S->top) { S->top = d; S->level[d] = id; }
    S->table[h] = (uint32_t)(id + 1);
    if ((u64)S->n >= S->tgrow && grow_table(S)) {   /* NOTE(memory) */
        if ((u64)S->n * 10 >= S->tsize * TABLE_FULL_TENTHS) return -9;
        S->tgrow = S->tsize * TABLE_FULL_TENTHS / 10;   /* (no room to grow before it is that full) */
    }
    return id;
}
static void note_failed(struct search *S, int64_t d, int64_t at, int64_t b) {
    if (S->failed_depth < 0) { S->failed_depth = d; S->failed_at = at; S->failed_b = b; }
}
HIDDEN void emit(struct search *S, int b, int error, const u64 *w, int flag) {
    struct succ *e = &S->buf[S->nbuf++];
    e->b = b; e->error = (int8_t)error; e->flag = (int8_t)flag;
    if (error) return;
#if SYMMETRY
    e->stab = canon(w, e->w);   /* the representative is what the search stores and checks */
#else
    memcpy(e->w, w, WORDS * sizeof(u64));
#endif
    e->h = hash_words(e->w);
}
/* always_inline: gcc 12 judges a function of prefetches alone `const` and drops its calls */
static inline __attribute__((always_inline)) void prefetch(const struct search *S, int64_t i) {
    /* NOTE(prefetch): the table slot of a successor AHEAD ahead, and the stored state that the
       slot of one AHEAD / 2 ahead names (its slot was fetched AHEAD / 2 successors ago). Hints
       only: what is fetched never changes what the search does. */
    if (i + AHEAD < S->nbuf && !S->buf[i + AHEAD].error)
        __builtin_prefetch(&S->table[slot(S->buf[i + AHEAD].h, S->tsize)]);
    if (i + AHEAD / 2 < S->nbuf && !S->buf[i + AHEAD / 2].error) {
        u64 h = slot(S->buf[i + AHEAD / 2].h, S->tsize);
        uint32_t e = S->table[h];
        if (e) {
            __builtin_prefetch(S->states + (int64_t)(e - 1) * WORDS);
            e = S->table[next_slot(h, S->tsize)];   /* (and the next slot's, often probed too) */
            if (e) __builtin_prefetch(S->states + (int64_t)(e - 1) * WORDS);
        }
    }
}
/* One successor, exactly as the per-state engine takes it: 0 go on, else a status. */
static int on_step(struct search *S, int64_t cur, int64_t cur_depth, const struct succ *e) {
    int64_t d = cur_depth + 1;
    if (e->error) { note_failed(S, d, cur, e->b); return 0; }
    S->transitions++;
    S->fired[e->b]++;
    if (e->flag) { S->event_at = cur; S->event_b = e->b; memcpy(S->last, e->w, WORDS * sizeof(u64)); return 2; }
    int64_t id = insert(S, e->w, e->h, cur, e->b, d);
    if (id == -1) return 0;
    if (id < -1) return 7;
#if SYMMETRY
    S->represented += ORDER / e->stab;
#endif
    u64 some = 0;
    int st = check_state(e->w, &some);
    if (st == 1) { note_failed(S, d, id, -1); return 0; }
    if (st == 2) { S->event_at = id; S->event_b = -1; return 3; }
    S->reached |= some & S->pending; S->pending &= ~some;
    if (S->max_states >= 0 && S->n >= S->max_states) return 4;
    return 0;
}

/* statuses: 0 time slice over (call again), 1 done (every state expanded), 2 a step violates,
   3 a state violates, 4 max-states, 5 max-depth, 6 a pending spec error ends the search,
   7 out of memory */
int ownership_run(struct search *S, int64_t budget) {
    int64_t until = S->head + budget;
    while (S->head < S->n) {
        /* expand a batch of parents first (that only fills buf), then take their successors in
           order, each parent's checks made when its turn comes, as if one at a time */
        int64_t first = S->head, last = first + BATCH;
        if (last > S->n) last = S->n;
        if (last > until) last = until > first ? until : first + 1;
        S->nbuf = 0;
        for (int64_t k = first; k < last; k++) {
            S->starts[k - first] = S->nbuf;
            expand(S, S->states + k * WORDS);
        }
        S->starts[last - first] = S->nbuf;
        for (int64_t i = 0; i < AHEAD && i < S->nbuf; i++)
            if (!S->buf[i].error) __builtin_prefetch(&S->table[slot(S->buf[i].h, S->tsize)]);
        for (int64_t idx = first; idx < last; idx++) {
            while (S->head_depth < S->top && idx >= S->level[S->head_depth + 1]) S->head_depth++;
            int64_t d = S->head_depth;
            if (S->failed_depth >= 0 && d >= S->failed_depth) return 6;
            if (S->head >= until) return 0;
            S->head++;
            if (d - 1 > S->deepest_done) S->deepest_done = d - 1;
            if (S->max_depth >= 0 && d >= S->max_depth) return 5;
            if (d >= 65535) return 7;   /* (bindings are kept in 16 bits; depths as deep) */
            for (int64_t i = S->starts[idx - first]; i < S->starts[idx - first + 1]; i++) {
                prefetch(S, i);
                int rc = on_step(S, idx, d, &S->buf[i]);
                if (rc) return rc;
            }
        }
    }
    return S->failed_depth >= 0 ? 6 : 1;
}
struct search *ownership_new(const u64 *initial, u64 pending, int64_t max_states, int64_t max_depth,
                             int64_t max_bytes) {
    struct search *S = (struct search *)calloc(1, sizeof(struct search));
    if (!S) return 0;
    S->cap = 1 << 12;
    S->states = (u64 *)store_alloc((size_t)S->cap * WORDS * sizeof(u64));
    S->parent = (int32_t *)store_alloc((size_t)S->cap * sizeof(int32_t));
    S->level = (int64_t *)calloc(65536, sizeof(int64_t));
    S->tsize = 1 << 13; S->tgrow = S->tsize / 2;
    S->table = (uint32_t *)store_alloc(S->tsize * sizeof(uint32_t));
    S->last = (u64 *)calloc(WORDS, sizeof(u64));
    S->buf = (struct succ *)malloc((size_t)BATCH * BINDINGS * sizeof(struct succ));
    S->starts = (int64_t *)malloc((size_t)(BATCH + 1) * sizeof(int64_t));
    if (!S->states || !S->parent || !S->level || !S->table || !S->last || !S->buf || !S->starts)
        return 0;
    S->max_states = max_states; S->max_depth = max_depth; S->max_bytes = max_bytes;
    S->failed_depth = -1; S->failed_at = -1; S->failed_b = -1; S->event_at = -1; S->event_b = -1;
    S->deepest_done = -1; S->pending = pending;
#if SYMMETRY
    u64 first[WORDS];
    S->represented = ORDER / canon(initial, first);
    insert(S, first, hash_words(first), -1, 0, 0);
#else
    insert(S, initial, hash_words(initial), -1, 0, 0);
#endif
    return S;
}
void ownership_free(struct search *S) {
    if (!S) return;
    store_free(S->states, (size_t)S->cap * WORDS * sizeof(u64));
    store_free(S->parent, (size_t)S->cap * sizeof(int32_t));
    store_free(S->table, S->tsize * sizeof(uint32_t));
    free(S->level); free(S->last);
    free(S->buf); free(S->starts); free(S);
}
int64_t ownership_get(struct search *S, int what) {
    switch (what) {
    case 0: return S->n; case 1: return S->transitions; case 2: return S->head;
    case 3: return S->deepest_done; case 4: return S->failed_depth; case 5: return S->failed_at;
    case 6: return S->failed_b; case 7: return S->event_at; case 8: return S->event_b;
    case 9: return (int64_t)S->reached; case 10: return S->top; case 12: return (int64_t)S->represented;
    case 11: return held_bytes(S);
    case 13: return S->n * (int64_t)(WORDS * 8 + 4) + (int64_t)S->tsize * 4;   /* NOTE(held-memory) */
    }
    return -1;
}
void ownership_fired(struct search *S, int64_t *out) { memcpy(out, S->fired, sizeof S->fired); }
void ownership_state(struct search *S, int64_t id, u64 *out) {
    memcpy(out, id < 0 ? S->last : S->states + id * WORDS, WORDS * sizeof(u64));
}
int64_t ownership_parent(struct search *S, int64_t id) { return S->parent[id]; }
/* The binding that first reached state id: the first of its parent's bindings whose successor
   is the state (NOTE(first-event): the parent is the first state to reach it, and a parent's
   successors are taken in binding order), found by expanding the parent again: 2 bytes a
   state less to keep. -1 for the initial state. */
int64_t ownership_via(struct search *S, int64_t id) {
    int64_t parent = S->parent[id];
    if (parent < 0) return -1;
    struct succ *keep = S->buf; int64_t kept = S->nbuf;
    struct succ *mine = (struct succ *)malloc((size_t)BINDINGS * sizeof(struct succ));
    if (!mine) return -2;
    S->buf = mine; S->nbuf = 0;
    expand(S, S->states + parent * WORDS);
    int64_t found = -3;
    for (int64_t i = 0; i < S->nbuf && found < 0; i++) {
        if (mine[i].error || mine[i].flag) continue;
        if (memcmp(mine[i].w, S->states + id * WORDS, WORDS * sizeof(u64)) == 0) found = mine[i].b;
    }
    S->buf = keep; S->nbuf = kept; free(mine);
    return found;
}
int64_t ownership_depth(struct search *S, int64_t id) { return depth_of(S, id); }
#if SYMMETRY
u64 ownership_canon(const u64 *P, u64 *out) { return canon(P, out); }   /* (for the tests) */
#endif
"""
