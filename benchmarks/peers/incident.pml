/*
 * The GLM-5.3 leak as a small protocol of its own: benchmarks/peers/incident.py, written again
 * in Promela for the benchmark suite (benchmarks/run.py), so that SPIN explores the same state
 * graph as ownership on a second model.
 *
 * One process; each action of the spec, for each request (and prompt length), is one option of
 * the main loop, executed as a d_step: a single transition, exactly like one action binding of
 * ownership. The guard is the first statement of each d_step. The ownership kernel's state for
 * the decode pool (owner and content per page; the pool is warm, so every page starts holding
 * an earlier request's KV, and it hands out its lowest free pages, so it keeps no free list) is
 * inlined; each kernel flag is an assert, and the leak property is asserted after every step.
 * The kernel's in-flight and outbound marks stay 0 in this model (it sends nothing) and are
 * left out. Scratch variables are `hidden`, and the initial state is set by the declarations,
 * so SPIN's stored states are the spec's states and its count equals ownership's without
 * reductions (-DNOREDUCE).
 *
 * Parameters (spin -D...): P pages (<= 8), R requests (<= 5), L longest prompt (<= 4);
 * the fix WITHDRAW_REJECTED (0 or 1). Request r of the spec is index r-1 here; values that name
 * a request (owner, content) use the spec's ids 1..R, 0 for none, R+1 for r0.
 */

#ifndef P
#define P 8
#endif
#ifndef R
#define R 3
#endif
#ifndef L
#define L 3
#endif
#ifndef WITHDRAW_REJECTED
#define WITHDRAW_REJECTED 0
#endif

#define EARLIER (R + 1)
#define CAPACITY (L - 1)
#define HAS(m, p) (((m) >> (p)) & 1)

#define S_NEW 0
#define S_ARRIVED 1
#define S_ADMITTED 2
#define S_DECODING 3
#define S_DONE 4
#define S_CANCELLING 5
#define S_ABORTED 6
#define S_RELEASED 7

/* the spec's slots, then the kernel's */
byte stage[R];
byte length[R];
byte sent[R];
byte table[R];
byte owner[P];
byte content[P] = EARLIER;

hidden byte s_i, s_q, s_k, s_n, s_got;

/* guards are expressions (a d_step must not block after its first statement) */
#define FR(p) ((p) < P -> (owner[(p) % P] == 0) : 0)
#define FREE (FR(0) + FR(1) + FR(2) + FR(3) + FR(4) + FR(5) + FR(6) + FR(7))
#define COUNT(m) (HAS(m, 0) + HAS(m, 1) + HAS(m, 2) + HAS(m, 3) + HAS(m, 4) + HAS(m, 5) + HAS(m, 6) + HAS(m, 7))
#define REJECTED(x) (length[x] > CAPACITY)
#define TO_SEND(x) (REJECTED(x) -> 1 : length[x])

inline first(mask, cnt) {            /* s_got := the cnt lowest pages of mask */
    s_got = 0; s_k = 0;
    for (s_i : 0 .. P - 1) {
        if
        :: HAS(mask, s_i) && s_k < cnt -> s_got = s_got | (1 << s_i); s_k++
        :: else -> skip
        fi
    }
}

inline free_pages(rid, m) {          /* kernel.free: double-free (in-flight marks are 0 here) */
    for (s_i : 0 .. P - 1) {
        if
        :: HAS(m, s_i) -> assert(owner[s_i] == rid); owner[s_i] = 0
        :: else -> skip
        fi
    }
}

inline leak_check() {                /* a request done or released owns no page */
    for (s_q : 0 .. R - 1) {
        if
        :: stage[s_q] == S_DONE || stage[s_q] == S_RELEASED ->
            for (s_i : 0 .. P - 1) { assert(owner[s_i] != s_q + 1) }
        :: else -> skip
        fi
    }
}

/* one option per action binding; x is the request's index, its id is x + 1 */
#define ARRIVE(x, n) \
    :: d_step { R > x && L >= n && stage[x] == S_NEW -> \
        length[x] = n; \
        stage[x] = S_ARRIVED; \
        leak_check(); skip }

#define ADMIT(x) \
    :: d_step { R > x && stage[x] == S_ARRIVED && !(WITHDRAW_REJECTED && REJECTED(x)) && FREE >= length[x] -> \
        s_n = 0; \
        for (s_i : 0 .. P - 1) { if :: owner[s_i] == 0 -> s_n = s_n | (1 << s_i) :: else -> skip fi } \
        first(s_n, length[x]); \
        for (s_i : 0 .. P - 1) { if :: HAS(s_got, s_i) -> owner[s_i] = x + 1 :: else -> skip fi } \
        table[x] = s_got; \
        stage[x] = S_ADMITTED; \
        leak_check(); skip }

#define WRITE(x) \
    :: d_step { R > x && (stage[x] == S_ADMITTED || stage[x] == S_CANCELLING) && \
                sent[x] < TO_SEND(x) && sent[x] < COUNT(table[x]) -> \
        first(table[x], sent[x] + 1); \
        for (s_i : 0 .. P - 1) { \
            if :: HAS(s_got, s_i) -> assert(owner[s_i] == x + 1); content[s_i] = x + 1 :: else -> skip fi } \
        sent[x] = sent[x] + 1; \
        leak_check(); skip }

#define READ(x) \
    :: d_step { R > x && stage[x] == S_ADMITTED && sent[x] == TO_SEND(x) -> \
        for (s_i : 0 .. P - 1) { \
            if :: HAS(table[x], s_i) -> assert(owner[s_i] == x + 1); assert(content[s_i] == x + 1) \
            :: else -> skip fi } \
        stage[x] = S_DECODING; \
        leak_check(); skip }

#define FINISH(x) \
    :: d_step { R > x && stage[x] == S_DECODING -> \
        free_pages(x + 1, table[x]); \
        table[x] = 0; \
        stage[x] = S_DONE; \
        leak_check(); skip }

#define CANCEL(x) \
    :: d_step { R > x && (stage[x] == S_ARRIVED || stage[x] == S_ADMITTED) -> \
        stage[x] = S_CANCELLING; \
        leak_check(); skip }

#define ABORT(x) \
    :: d_step { R > x && (stage[x] == S_CANCELLING || \
                          (WITHDRAW_REJECTED && stage[x] == S_ARRIVED && REJECTED(x))) -> \
        stage[x] = S_ABORTED; \
        leak_check(); skip }

#define RELEASE(x) \
    :: d_step { R > x && stage[x] == S_ABORTED -> \
        free_pages(x + 1, table[x]); \
        table[x] = 0; \
        stage[x] = S_RELEASED; \
        leak_check(); skip }

#define REQUEST(x) \
    ARRIVE(x, 1) ARRIVE(x, 2) ARRIVE(x, 3) ARRIVE(x, 4) \
    ADMIT(x) WRITE(x) READ(x) FINISH(x) CANCEL(x) ABORT(x) RELEASE(x)

init {
end:                                 /* a state where every request has finished is a valid end */
    do
    REQUEST(0)
    REQUEST(1)
    REQUEST(2)
    REQUEST(3)
    REQUEST(4)
    od
}
