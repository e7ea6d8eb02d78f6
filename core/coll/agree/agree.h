/* Argument agreement: the header every collective exchanges before (or
 * with) its data, the lanes and votes it carries, and the exchange that
 * combines it over all ranks (docs/collectives.md, "Agreement").
 *
 * The header holds the call's arguments (kind, algorithm, count, datatype,
 * op, root, a hash of v-counts, a "bad" flag) as min[] and max[] words,
 * combined with min and max over all ranks; min != max in any field is a
 * mismatch every rank sees, because every rank ends with the same min/max.
 * The exchange takes one of three forms (engine/kind.h), each in its own
 * file: recursive doubling (agree_rd.c), flat (agree_flat.c: every rank with
 * every other in one round) and shared memory (agree_shm.c: one slot per
 * rank in the communicator's segment). Each form may carry a payload that is
 * reduced (or, in broadcast mode, copied from a root) as the headers are
 * combined, so small collectives agree and move their data in the same
 * messages. Because the exchange has the same partners and tags whatever
 * the arguments (the form follows the communicator and its settings only),
 * ranks that disagree still exchange exactly the same messages and none
 * waits forever; a message of the wrong length only marks the header bad.
 *
 * Votes: a per-call yes/no rides a lane of the lanes word above the lanes
 * the mismatch check reads (ZAP_COLL_LANE_N and up). Equal words combine
 * unchanged and differing ones are rebuilt lane by lane for the defined lanes
 * only, leaving a vote lane 0, so the agreed minimum is 1 exactly when every
 * rank voted 1. Candidates whose predicate only the ranks together can
 * decide (the memory kind of every rank's buffers) vote this way
 * (engine/select.h). */
#ifndef ZAP_COLL_AGREE_H
#define ZAP_COLL_AGREE_H
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "zap/pool.h"
#include "coll/engine/kind.h"
#include "coll/shm/shm_wait.h"

typedef struct zap_coll_op zap_coll_op_t;
typedef struct zap_comm zap_comm_t;

#define ZAP_COLL_AGREE_INLINE_BYTES 4096 /* the exchange's message slots (2, or p when flat) for small host payloads */
#define ZAP_COLL_FLAT_MAX_RANKS 32       /* the flat form: one slot and two requests per rank */
#define ZAP_COLL_AGREE_GATHER (-2)       /* zap_coll_agree_t.root of zap_coll_agree_init_gather */

/* Header words, exchanged as min[] and max[]: three whole words and one of
 * 8-bit lanes. 64 bytes in all, so an 8-byte allreduce's message (header and
 * payload) stays within UCX's short-message size on shared memory, the
 * cheapest path it has. The sequence number needs no field: it is in the tag. */
enum {
    ZAP_HDR_COUNT,
    ZAP_HDR_ROOT,  /* (uint64_t)(int64_t)root; -1 when the collective has none */
    ZAP_HDR_EXTRA, /* hash of v-counts, a large form's chunk, or 0 */
    ZAP_HDR_LANES, /* ZAP_COLL_LANE_* fields, 8 bits each, min/max taken lane by lane */
    ZAP_HDR_NWORDS
};
enum {
    ZAP_COLL_LANE_KIND, /* collective kind */
    ZAP_COLL_LANE_ALG,  /* algorithm (0xff: this rank failed before choosing one) */
    ZAP_COLL_LANE_DTYPE,
    ZAP_COLL_LANE_OP,
    ZAP_COLL_LANE_BAD, /* 1 when a rank found its own arguments or a message wrong */
    ZAP_COLL_LANE_N
};
/* The vote lanes (above ZAP_COLL_LANE_N, ignored by the mismatch check): every
 * rank's buffers are host memory (the single-copy allreduce), every rank's
 * are GPU-resident (the GPU path). */
#define ZAP_COLL_LANE_VOTE_HOST 6
#define ZAP_COLL_LANE_VOTE_GPU 7
_Static_assert(ZAP_COLL_LANE_N <= ZAP_COLL_LANE_VOTE_HOST && ZAP_COLL_LANE_VOTE_GPU < 8, "vote lanes are free");

typedef struct zap_coll_hdr {
    uint64_t min[ZAP_HDR_NWORDS];
    uint64_t max[ZAP_HDR_NWORDS];
} zap_coll_hdr_t;
_Static_assert(sizeof(zap_coll_hdr_t) == 64, "header size is part of the small-message budget");

/* The bad lane names who is at fault, so that every rank's log can say it
 * (the lane's max over the ranks survives the exchange): 2 + the
 * communicator rank whose own arguments were wrong, or ZAP_COLL_BAD_UNNAMED
 * for a message of the wrong size (its origin is not known where it is
 * seen; a header-only participant's partners see one) and for ranks above
 * 252. A named rank outranks the unnamed mark. 0: nothing wrong. */
#define ZAP_COLL_BAD_UNNAMED 1u
static inline void zap_coll_agree_set_bad(zap_coll_hdr_t *h, uint64_t v)
{
    const int at = 8 * ZAP_COLL_LANE_BAD;
    for (int i = 0; i < 2; i++) {
        uint64_t *w = i == 0 ? &h->min[ZAP_HDR_LANES] : &h->max[ZAP_HDR_LANES];
        if (((*w >> at) & 0xff) < v)
            *w = (*w & ~((uint64_t)0xff << at)) | v << at;
    }
}

/* A message of the wrong size whose header arrived whole (len bytes; a
 * header-only participant's, typically): the rank it names as at fault is
 * kept, though nothing else of it is merged. */
static inline void zap_coll_agree_keep_named(zap_coll_hdr_t *acc, const zap_coll_hdr_t *in, size_t len)
{
    if (in != NULL && len >= sizeof(*in))
        zap_coll_agree_set_bad(acc, (in->max[ZAP_HDR_LANES] >> (8 * ZAP_COLL_LANE_BAD)) & 0xff);
}

/* Marks a header bad: a received message was wrong. */
static inline void zap_coll_agree_mark_bad(zap_coll_hdr_t *h) { zap_coll_agree_set_bad(h, ZAP_COLL_BAD_UNNAMED); }

/* Marks this rank's own header bad: its arguments were wrong (comm rank
 * rank, named in the other ranks' verdicts). */
static inline void zap_coll_agree_mark_bad_own(zap_coll_hdr_t *h, int rank)
{
    zap_coll_agree_set_bad(h, rank >= 0 && rank <= 252 ? (uint64_t)rank + 2 : ZAP_COLL_BAD_UNNAMED);
}

typedef enum zap_coll_agree_state {
    ZAP_AGREE_START,
    ZAP_AGREE_FOLD_IN,  /* recursive doubling: extra ranks hand their data to a partner */
    ZAP_AGREE_STEP_POST,
    ZAP_AGREE_STEP_WAIT,
    ZAP_AGREE_FOLD_OUT, /* partners hand the result back */
    ZAP_AGREE_FOLD_OUT_WAIT,
    ZAP_AGREE_DONE
} zap_coll_agree_state_t;

/* One exchange: header always, payload optional. */
typedef struct zap_coll_agree {
    zap_coll_agree_state_t state;
    zap_coll_form_t form;
    int phase;           /* tag phase */
    int newrank;         /* recursive doubling: rank among the power-of-two group, -1 when folded out */
    int mask;
    size_t count;        /* payload elements (0: header only) */
    zap_dtype_t dt;
    zap_op_t op;
    zap_coll_hdr_t *acc; /* accumulated header, followed by count elements */
    zap_coll_hdr_t *in;  /* receive area, same layout */
    zap_buf_t buf;       /* acc and in for payloads too large for the inline area */
    /* The message slots for the header alone and for small host payloads
     * (while all slots fit ZAP_COLL_AGREE_INLINE_BYTES), so small allreduces
     * take no pool buffer at all. */
    alignas(64) unsigned char inline_area[ZAP_COLL_AGREE_INLINE_BYTES];
    size_t msg_bytes;
    int root;    /* broadcast mode: the root (its data travels, nothing is reduced); -1: reduce;
                    ZAP_COLL_AGREE_GATHER: every rank's data published, nothing combined */
    int root_nr; /* broadcast mode: newrank holding the data after the fold */
    size_t expect; /* length the pending receive must have */
    size_t in_len;
    zap_status_t in_st;
    /* Flat form: every rank's message in one round, slot i of stride bytes
     * at acc holding rank i's; the result ends in slot 0. */
    size_t stride;
    size_t flat_len[ZAP_COLL_FLAT_MAX_RANKS];
    zap_status_t flat_st[ZAP_COLL_FLAT_MAX_RANKS];
    /* Shared-memory form: set while this exchange holds a number in the
     * segment (cleared by the engine when an operation is taken); the number,
     * the payload's source (read when this rank's slot is free), the wait. */
    bool shm;
    uint64_t shm_seq;
    const void *shm_src;
    const void *shm_src2; /* gather mode: a second range appended to the payload (shm_bytes2 bytes of it) */
    size_t shm_bytes2;
    zap_coll_shm_wait_t shm_wait;
    uint64_t shm_need; /* the ranks whose slots this rank reads (bit q: rank q); all others unless one-way */
    bool shm_lone;     /* a failure of this exchange may be seen on this rank alone: it revokes (op.c) */
    int shm_chain_bad; /* the first rank read whose chain differs from this rank's, or -1 */
    bool shm_prepub;   /* the fast form wrote this rank's slot before handing the call over */
    /* Hierarchical form, broadcast mode: one way down a tree from the root
     * (agree_tree.c) instead of the two-way exchange. */
    bool oneway;
} zap_coll_agree_t;

/* --- the header (agree.c) -------------------------------------------------- */
/* A rank's own header words for a call of kind run by alg with these fields
 * (min and max alike). */
void zap_coll_hdr_words(uint64_t w[ZAP_HDR_NWORDS], zap_coll_kind_t kind, int alg, size_t count, zap_dtype_t dt,
                        zap_op_t zop, int root, uint64_t extra);
/* Fills op's own header from its kind and alg and the given fields. */
void zap_coll_agree_header(zap_coll_op_t *op, size_t count, zap_dtype_t dt, zap_op_t zop, int root, uint64_t extra,
                           bool bad);
/* Rewrites the algorithm lane of op's own header (before the exchange). */
void zap_coll_agree_set_alg(zap_coll_op_t *op, int alg);
/* This rank's vote on lane (after zap_coll_agree_header), and after the
 * exchange whether every rank voted yes. */
void zap_coll_agree_vote(zap_coll_op_t *op, int lane, bool yes);
bool zap_coll_agree_voted(const zap_coll_op_t *op, int lane);

/* --- the exchange ---------------------------------------------------------- */
/* Sets up the exchange of op's own header in the given form and tag phase,
 * with count elements of payload from data (NULL when count is 0) reduced
 * with zop over all ranks. Returns ZAP_OK, or ZAP_ERR_NO_MEMORY when the
 * payload needs pool scratch and there is none. */
zap_status_t zap_coll_agree_init(zap_coll_op_t *op, zap_coll_form_t form, int phase, const void *data, size_t count,
                                 zap_dtype_t dt, zap_op_t zop);
/* The same exchange as a broadcast of bytes from root (data read on the root
 * only): in recursive doubling a side sends its payload only once its
 * subcube holds the root's data, so the agreement and the broadcast share
 * log2(p) rounds. Not in the flat form. */
zap_status_t zap_coll_agree_init_bcast(zap_coll_op_t *op, zap_coll_form_t form, int phase, const void *data,
                                       size_t bytes, int root);
/* The shared-memory form only: every rank publishes bytes of its own from
 * data in its slot (at most ZAP_COLL_SHM_PAYLOAD) and nothing is combined;
 * after ZAP_OK, zap_coll_agree_slot gives rank q's bytes. They stay valid
 * until this rank's next shared-memory exchange publishes, so the caller
 * reads them in the progress call that saw the agreement complete (no other
 * exchange of this rank can publish before). For collectives that read the
 * other ranks' contributions themselves (gather, alltoall, scan). */
zap_status_t zap_coll_agree_init_gather(zap_coll_op_t *op, const void *data, size_t bytes);
/* The same with a payload of two ranges, bytes from data then bytes2 from
 * data2 (a scatter's root publishes every block but its own). */
zap_status_t zap_coll_agree_init_gather2(zap_coll_op_t *op, const void *data, size_t bytes, const void *data2,
                                         size_t bytes2);
const void *zap_coll_agree_slot(const zap_coll_op_t *op, int q);
/* The shared-memory form only (ignored otherwise), after an init: this rank
 * reads only the slots of the ranks in need (bit q: rank q; its own bit is
 * dropped), making the exchange one-way: a broadcast's root reads none and
 * returns once its slot is written, a gather's non-root the same, a
 * broadcast's other ranks wait for the root's slot alone. The payload
 * combination (reduce mode) then runs only on a rank that reads every slot,
 * and zap_coll_agree_slot is valid for those ranks only. Mismatches are
 * found by the ranks that read a differing slot, in that call or, through
 * the chain, at a later one (agree_shm.c); such a failure revokes the
 * communicator. For calls the agreement carries whole only: a form that
 * moves data after agreeing needs every rank to know the arguments agreed. */
void zap_coll_agree_shm_need(zap_coll_op_t *op, uint64_t need);
/* Advances it: ZAP_INPROGRESS, ZAP_OK (arguments agree), ZAP_ERR_MISMATCH
 * (logged once with the differing field) or a transport error. */
zap_status_t zap_coll_agree_progress(zap_coll_op_t *op);
/* The payload after ZAP_OK. */
void *zap_coll_agree_result(zap_coll_op_t *op);
/* Releases the exchange's pool buffer (done by the engine at the end). */
void zap_coll_agree_release(zap_coll_op_t *op);

/* A blocking exchange that carries a payload (count elements of dt, reduced
 * with zop) with a header of kind: zap's own agreements (communicator ids).
 * Recursive doubling, whatever the communicator's settings. */
zap_status_t zap_coll_agree_allreduce(zap_comm_t *comm, zap_coll_kind_t kind, const void *in, void *out,
                                      size_t count, zap_dtype_t dt, zap_op_t zop);

/* --- shared by the forms (agree.c) ------------------------------------------ */
/* acc's min/max fields and lanes widened by in's. */
void zap_coll_agree_merge(zap_coll_hdr_t *acc, const zap_coll_hdr_t *in);
/* acc = lower op higher, where acc is one of them and the other is the
 * received message; a malformed message only marks the header bad. */
zap_status_t zap_coll_agree_combine(zap_coll_op_t *op, bool in_is_lower);
/* ZAP_OK, or ZAP_ERR_MISMATCH logged with the differing field. */
zap_status_t zap_coll_agree_verdict(zap_coll_op_t *op);
zap_status_t zap_coll_agree_rd_progress(zap_coll_op_t *op);
zap_status_t zap_coll_agree_flat_setup(zap_coll_op_t *op, const void *data);
zap_status_t zap_coll_agree_flat_progress(zap_coll_op_t *op);
/* The shared-memory form: setup takes the exchange's number in the segment
 * (or keeps the one op reserved and has not published yet); progress
 * publishes this rank's slot when it may and waits for the others. */
zap_status_t zap_coll_agree_shm_setup(zap_coll_op_t *op, bool reserved);
zap_status_t zap_coll_agree_shm_progress(zap_coll_op_t *op);
/* The fast form (agree_shm.c, for engine/fast.c): the shared-memory
 * exchange of a small blocking call run by its caller, without an
 * operation, when nothing else of the communicator is in flight. It writes
 * exactly the slot the operation would (the same words, chain and payload),
 * so ranks that take it and ranks that run the operation meet in one
 * exchange. */
typedef struct zap_coll_shm_fast {
    uint64_t words[ZAP_HDR_NWORDS]; /* this rank's header words, as the engine builds them */
    const void *src;                /* the payload this rank writes (bytes; 0: none), host memory */
    size_t bytes;
    const void *src2;               /* and after it bytes2 more from src2 (0: none; zap_coll_agree_init_gather2) */
    size_t bytes2;
    uint64_t need;                  /* the ranks whose slots this rank reads (bit q: rank q) */
    /* via >= 0: a rank of need whose completion vouches for the others: once
     * its slot holds this exchange with this rank's words and chain, and the
     * 8-byte word at via_off in its payload holds the exchange's number
     * (stored with release order only after that rank itself read and
     * checked every slot it needed), this rank reads no other slot. -1:
     * none (the engine's default). */
    int via;
    size_t via_off;
    uint64_t seq;                   /* set by open: the exchange's number */
} zap_coll_shm_fast_t;
/* Writes this rank's slot and polls up to polls times for the needed ones.
 * ZAP_OK: every needed slot is there with this rank's words and chain; the
 * caller reads them (zap_coll_agree_shm_fast_slot) and then closes.
 * ZAP_INPROGRESS: the slot is written but the rest is not there or differs:
 * the caller posts the same call as an operation at once, whose exchange
 * takes this one over (it waits, or finds and reports the mismatch).
 * ZAP_ERR_UNSUPPORTED: nothing was written (an earlier exchange unfinished,
 * the bank not yet free): the caller posts the call as an operation. */
zap_status_t zap_coll_agree_shm_fast_open(zap_comm_t *comm, zap_coll_shm_fast_t *f, unsigned polls);
/* Rank q's payload in the open exchange (q needed, or this rank). */
const void *zap_coll_agree_shm_fast_slot(const zap_comm_t *comm, const zap_coll_shm_fast_t *f, int q);
/* dst = the payloads of ranks 0 .. last in exchange seq of comm's segment,
 * reduced in rank order with op (count elements of dt): what the two-way
 * exchange, the fast form and the forms that read the slots themselves
 * (scan) all compute. */
void zap_coll_agree_shm_reduce(const zap_comm_t *comm, uint64_t seq, int last, zap_dtype_t dt, zap_op_t op, void *dst,
                               size_t count);
/* Ends it: the chain moves on and the slots read are free to reuse. */
void zap_coll_agree_shm_fast_close(zap_comm_t *comm, const zap_coll_shm_fast_t *f);
/* The hierarchical form (agree_hier.c): up to each host's leader, across the
 * leaders by recursive doubling over the hosts, down again. */
zap_status_t zap_coll_agree_hier_progress(zap_coll_op_t *op);
/* The hierarchical form's one-way broadcast (agree_tree.c): bytes of data
 * from root down a binomial tree over the hosts and then inside each host,
 * no message back. Each rank checks the header it receives against its own,
 * a mismatch is seen by the receivers alone and revokes the communicator
 * (shm_lone); the root completes once its sends have. ZAP_OK or
 * ZAP_ERR_NO_MEMORY, as zap_coll_agree_init_bcast. */
zap_status_t zap_coll_agree_init_bcast_tree(zap_coll_op_t *op, int phase, const void *data, size_t bytes, int root);
zap_status_t zap_coll_agree_tree_progress(zap_coll_op_t *op);
#endif
