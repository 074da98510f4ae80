/*
 * SGLang prefill/decode disaggregation: specs/sglang_pd.py, hand-written in Promela for the
 * benchmark suite (benchmarks/run.py), so that SPIN explores the same state graph as ownership.
 *
 * One process; each action of the spec, for each request (and prompt length), is one option of
 * the main loop, executed as a d_step: a single transition, exactly like one action binding of
 * ownership. The guard is the first statement of each d_step. The ownership kernel (owner,
 * content, inflight and outbound marks per page, decode's LIFO free list, a warm decode pool)
 * is inlined; each kernel flag is an assert, and the leak property is asserted after every
 * step. Scratch variables are `hidden` (not part of the state), and the initial state is set by
 * the declarations (no initialising step), so SPIN's stored states are the spec's states and
 * its count equals ownership's without reductions (-DNOREDUCE).
 *
 * Parameters (spin -D...): R requests (<= 4), C context pages (= prefill pool size, <= 4),
 * PP prefill admission limit, DP decode pool (<= 8); fixes DOOR_RETIRE, POST_FORWARD_RETIRE,
 * POOL_FITS_CONTEXT, COVERAGE_CHECK (0 or 1). Request r of the spec is index r-1 here; values
 * that name a request (owner, content, marks) use the spec's ids 1..R, 0 for none, R+1 for r0.
 */

#ifndef R
#define R 2
#endif
#ifndef C
#define C 3
#endif
#ifndef PP
#define PP 2
#endif
#ifndef DP
#define DP 4
#endif
#ifndef DOOR_RETIRE
#define DOOR_RETIRE 0
#endif
#ifndef POST_FORWARD_RETIRE
#define POST_FORWARD_RETIRE 0
#endif
#ifndef POOL_FITS_CONTEXT
#define POOL_FITS_CONTEXT 0
#endif
#ifndef COVERAGE_CHECK
#define COVERAGE_CHECK 0
#endif

#define EARLIER (R + 1)
#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define PREFILL_LIMIT (POOL_FITS_CONTEXT -> C : MIN(PP, C))
#define DECODE_LIMIT MIN(DP, C)
#define DMASK ((1 << DP) - 1)
#define HAS(m, p) (((m) >> (p)) & 1)
#define FL(j) (d_flx[j] ^ (j))                      /* free list entry j (DP: none) */
#define SET_FL(j, v) d_flx[j] = (v) ^ (j)

/* prefill stages (P) and decode stages (D) */
#define P_NEW 0
#define P_QUEUED 1
#define P_FORWARDED 2
#define P_SENDING 3
#define P_DONE 4
#define P_RETIRED 5
#define D_NEW 0
#define D_QUEUED 1
#define D_WAITING 2
#define D_RUNNING 3
#define D_DONE 4
#define D_RETIRED 5
#define D_ABORTED 6

/* the spec's slots, then the kernel's: prefill pool (C pages, lowest order), decode pool (DP
   pages, LIFO, warm) */
byte p_stage[R];
byte d_stage[R];
byte prompt[R];
byte sent[R];
bool aborted[R];
byte p_table[R];
byte d_table[R];
byte p_owner[C];
byte p_content[C];
byte p_inflight[C];
byte p_outbound[C];
byte d_owner[DP];
byte d_content[DP] = EARLIER;
byte d_inflight[DP];
byte d_outbound[DP];
byte d_flx[DP];     /* decode's free list, stored as entry XOR index so that it starts all 0 */

hidden byte s_i, s_q, s_k, s_n, s_t, s_got, s_src, s_dst, s_pages, s_ok, s_retire;

/* free s_pages of each pool, for guards (an expression: a d_step must not block after its
   first statement); pools of up to 4 (prefill) and 8 (decode) s_pages */
#define PF(p) ((p) < C -> (p_owner[(p) % C] == 0) : 0)
#define P_FREE (PF(0) + PF(1) + PF(2) + PF(3))
#define DF(p) ((p) < DP -> (d_owner[(p) % DP] == 0) : 0)
#define D_FREE (DF(0) + DF(1) + DF(2) + DF(3) + DF(4) + DF(5) + DF(6) + DF(7))

inline first(mask, cnt, bits) {      /* s_got := the cnt lowest s_pages of mask */
    s_got = 0; s_k = 0;
    for (s_i : 0 .. bits - 1) {
        if
        :: HAS(mask, s_i) && s_k < cnt -> s_got = s_got | (1 << s_i); s_k++
        :: else -> skip
        fi
    }
}

inline popcount(mask, bits) {        /* s_k := number of s_pages in mask */
    s_k = 0;
    for (s_i : 0 .. bits - 1) { s_k = s_k + HAS(mask, s_i) }
}

inline p_read(rid, m) {              /* kernel.read on prefill: read-unowned, stale-read */
    for (s_i : 0 .. C - 1) {
        if
        :: HAS(m, s_i) -> assert(p_owner[s_i] == rid); assert(p_content[s_i] == rid)
        :: else -> skip
        fi
    }
}

inline d_read(rid, m) {
    for (s_i : 0 .. DP - 1) {
        if
        :: HAS(m, s_i) -> assert(d_owner[s_i] == rid); assert(d_content[s_i] == rid)
        :: else -> skip
        fi
    }
}

inline p_free(rid, m) {              /* kernel.free on prefill: double-free, free-in-flight */
    for (s_i : 0 .. C - 1) {
        if
        :: HAS(m, s_i) ->
            assert(p_owner[s_i] == rid);
            assert(p_inflight[s_i] == 0 && p_outbound[s_i] == 0);
            p_owner[s_i] = 0
        :: else -> skip
        fi
    }
}

inline d_free(rid, m) {              /* on decode, then prepend the s_pages to the free list */
    for (s_i : 0 .. DP - 1) {
        if
        :: HAS(m, s_i) ->
            assert(d_owner[s_i] == rid);
            assert(d_inflight[s_i] == 0 && d_outbound[s_i] == 0);
            d_owner[s_i] = 0
        :: else -> skip
        fi
    }
    popcount(m, DP);
    for (s_i : 0 .. DP - 1) {
        s_t = DP - 1 - s_i;
        if
        :: s_t >= s_k -> SET_FL(s_t, FL(s_t - s_k))
        :: else -> skip
        fi
    }
    s_q = 0;
    for (s_i : 0 .. DP - 1) {
        if
        :: HAS(m, s_i) -> SET_FL(s_q, s_i); s_q++
        :: else -> skip
        fi
    }
}

inline leak_check() {                /* a finished request owns no page */
    for (s_q : 0 .. R - 1) {
        if
        :: (p_stage[s_q] == P_DONE || p_stage[s_q] == P_RETIRED) &&
           (d_stage[s_q] == D_DONE || d_stage[s_q] == D_RETIRED || d_stage[s_q] == D_ABORTED) ->
            for (s_i : 0 .. C - 1) { assert(p_owner[s_i] != s_q + 1) }
            for (s_i : 0 .. DP - 1) { assert(d_owner[s_i] != s_q + 1) }
        :: else -> skip
        fi
    }
}

/* one option per action binding; x is the request's index, its id is x + 1 */
#define ARRIVE(x, len) \
    :: d_step { R > x && C >= len && p_stage[x] == P_NEW && d_stage[x] == D_NEW -> \
        aborted[x] = (len > PREFILL_LIMIT); \
        sent[x] = (len > PREFILL_LIMIT -> 1 : len); \
        prompt[x] = (len > DECODE_LIMIT -> 1 : len); \
        p_stage[x] = ((len > PREFILL_LIMIT) && DOOR_RETIRE -> P_RETIRED : P_QUEUED); \
        d_stage[x] = ((len > DECODE_LIMIT) && DOOR_RETIRE -> D_RETIRED : D_QUEUED); \
        leak_check(); skip }

#define DECODE_PREALLOC(x) \
    :: d_step { R > x && d_stage[x] == D_QUEUED && D_FREE >= prompt[x] -> \
        s_n = prompt[x]; s_got = 0; \
        for (s_i : 0 .. DP - 1) { if :: s_i < s_n -> s_got = s_got | ((1 << FL(s_i)) & DMASK) :: else -> skip fi } \
        for (s_i : 0 .. DP - 1) { s_t = s_i + s_n; if :: s_t < DP -> SET_FL(s_i, FL(s_t)) :: else -> SET_FL(s_i, DP) fi } \
        for (s_i : 0 .. DP - 1) { if :: HAS(s_got, s_i) -> d_owner[s_i] = x + 1 :: else -> skip fi } \
        d_table[x] = s_got; \
        d_stage[x] = D_WAITING; \
        leak_check(); skip }

#define PREFILL_FORWARD(x) \
    :: d_step { R > x && p_stage[x] == P_QUEUED && d_stage[x] == D_WAITING && P_FREE >= sent[x] -> \
        s_pages = 0; \
        for (s_i : 0 .. C - 1) { if :: p_owner[s_i] == 0 -> s_pages = s_pages | (1 << s_i) :: else -> skip fi } \
        first(s_pages, sent[x], C); \
        for (s_i : 0 .. C - 1) { if :: HAS(s_got, s_i) -> p_owner[s_i] = x + 1 :: else -> skip fi } \
        for (s_i : 0 .. C - 1) { if :: HAS(s_got, s_i) -> assert(p_owner[s_i] == x + 1); p_content[s_i] = x + 1 :: else -> skip fi } \
        p_table[x] = s_got; \
        p_stage[x] = P_FORWARDED; \
        leak_check(); skip }

#define PREFILL_RESULT(x) \
    :: d_step { R > x && p_stage[x] == P_FORWARDED -> \
        s_retire = aborted[x] && POST_FORWARD_RETIRE; \
        first(d_table[x], sent[x], DP); s_dst = s_got; \
        popcount(s_dst, DP); first(p_table[x], s_k, C); s_src = s_got; \
        if :: s_retire -> s_src = 0; s_dst = 0 :: else -> skip fi; \
        p_read(x + 1, s_src); \
        for (s_i : 0 .. C - 1) { if :: HAS(s_src, s_i) -> p_outbound[s_i] = x + 1 :: else -> skip fi } \
        for (s_i : 0 .. DP - 1) { if :: HAS(s_dst, s_i) -> d_inflight[s_i] = x + 1 :: else -> skip fi } \
        if :: s_retire -> s_pages = p_table[x] :: else -> s_pages = 0 fi; \
        p_free(x + 1, s_pages); \
        if :: s_retire -> p_table[x] = 0; p_stage[x] = P_RETIRED :: else -> p_stage[x] = P_SENDING fi; \
        leak_check(); skip }

#define TRANSFER_DONE(x) \
    :: d_step { R > x && p_stage[x] == P_SENDING -> \
        for (s_i : 0 .. C - 1) { \
            if :: p_inflight[s_i] == x + 1 -> assert(p_owner[s_i] == x + 1); p_content[s_i] = x + 1; p_inflight[s_i] = 0 :: else -> skip fi; \
            if :: p_outbound[s_i] == x + 1 -> p_outbound[s_i] = 0 :: else -> skip fi } \
        for (s_i : 0 .. DP - 1) { \
            if :: d_inflight[s_i] == x + 1 -> assert(d_owner[s_i] == x + 1); d_content[s_i] = x + 1; d_inflight[s_i] = 0 :: else -> skip fi; \
            if :: d_outbound[s_i] == x + 1 -> d_outbound[s_i] = 0 :: else -> skip fi } \
        p_free(x + 1, p_table[x]); \
        p_table[x] = 0; \
        p_stage[x] = P_DONE; \
        leak_check(); skip }

#define DECODE_COMMIT(x) \
    :: d_step { R > x && d_stage[x] == D_WAITING && p_stage[x] == P_DONE -> \
        s_ok = (COVERAGE_CHECK -> sent[x] >= prompt[x] : 1); \
        if :: s_ok -> s_pages = d_table[x] :: else -> s_pages = 0 fi; \
        d_read(x + 1, s_pages); \
        if :: s_ok -> s_pages = 0 :: else -> s_pages = d_table[x] fi; \
        d_free(x + 1, s_pages); \
        if :: s_ok -> d_stage[x] = D_RUNNING :: else -> d_table[x] = 0; d_stage[x] = D_ABORTED fi; \
        leak_check(); skip }

#define DECODE_FINISH(x) \
    :: d_step { R > x && d_stage[x] == D_RUNNING -> \
        d_free(x + 1, d_table[x]); \
        d_table[x] = 0; \
        d_stage[x] = D_DONE; \
        leak_check(); skip }

#define DECODE_TIMEOUT(x) \
    :: d_step { R > x && d_stage[x] == D_WAITING && p_stage[x] == P_RETIRED -> \
        d_free(x + 1, d_table[x]); \
        d_table[x] = 0; \
        d_stage[x] = D_ABORTED; \
        leak_check(); skip }

#define REQUEST(x) \
    ARRIVE(x, 1) ARRIVE(x, 2) ARRIVE(x, 3) ARRIVE(x, 4) \
    DECODE_PREALLOC(x) PREFILL_FORWARD(x) PREFILL_RESULT(x) TRANSFER_DONE(x) \
    DECODE_COMMIT(x) DECODE_FINISH(x) DECODE_TIMEOUT(x)

init {
end:                                 /* a state where every request has finished is a valid end */
    do
    REQUEST(0)
    REQUEST(1)
    REQUEST(2)
    REQUEST(3)
    od
}
