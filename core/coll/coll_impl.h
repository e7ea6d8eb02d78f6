/* Internals shared by the collectives: the communicator, the operation
 * (request) every collective runs as, the tag layout and the step helpers.
 *
 * Every collective is a state machine advanced by a progress function; a
 * blocking call posts the operation and waits on it. An operation owns the
 * transport requests of its current step (at most ZAP_COLL_MAX_REQS) and one
 * or two scratch buffers drawn from the transport's pool when it is posted, so
 * the steps themselves never allocate.
 *
 * Tags fit in 44 bits, the part of the tag the UCX transport maps one to one
 * (zap/ucp.h): bit 43 set marks collective traffic (tags below 2^43 stay free
 * for other users of the transport); bits 32..42 the communicator id (11
 * bits); bits 16..31 the operation's sequence number on its communicator,
 * modulo 2^16; bits 12..15 the phase (0: header exchange, 1..: algorithm
 * phases); bits 0..11 the step within the phase, modulo 4096. Operations in
 * flight together (fewer than 65536 on a communicator) therefore never match
 * each other's messages, and messages of one step between one pair of ranks
 * arrive in order (the transport's guarantee), which the pipelined algorithms
 * use. Communicator ids wrap after 1023 creations.
 *
 * Argument agreement: every collective starts with a header of its arguments
 * (kind, algorithm, count, datatype, op, root, a hash of v-counts, a "bad"
 * flag) that is reduced with min and max over all ranks by recursive
 * doubling; min != max in any field is a mismatch every rank sees, because
 * every rank ends with the same min/max. The recursive-doubling allreduce
 * carries this header inside its data messages, so small allreduces pay no
 * extra round. An allreduce on a rank count with a "direct" selection row
 * (or under ZAP_ALLREDUCE_ALG=direct) exchanges the header flat instead, every
 * rank with every other in one round (allreduce_direct.c), carrying small
 * vectors the same way. Because the header exchange has the same partners and
 * tags whatever the arguments (the flat/recursive-doubling choice follows the
 * rank count and the setting only), ranks that disagree still exchange
 * exactly the same number of messages and none waits forever. */
#ifndef ZAP_COLL_IMPL_H
#define ZAP_COLL_IMPL_H
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "transport/transport_impl.h"
#include "base/config_table.h"

#define ZAP_COLL_MAX_REQS 64 /* the direct exchange posts 2 (p - 1) at once */
#define ZAP_COLL_ALG_STATE_BYTES 256
#define ZAP_COLL_TAG_BIT (UINT64_C(1) << 43)
#define ZAP_COLL_COMM_ID_MAX 0x3ff /* bits 32..41; bit 42 is checksum mode's (core/transport/checksum.h) */
#define ZAP_COLL_BOOT_ID 0 /* reserved for zap_comm_create's own exchange */
#define ZAP_COLL_STEP_MAX 0xfff
#define ZAP_COLL_RD_INLINE_BYTES 4096 /* the exchange's message slots (2, or p when flat) for small host payloads */
#define ZAP_COLL_FLAT_MAX_RANKS 32  /* the direct (flat) exchange: one slot and two requests per rank */

/* Header words, exchanged as min[] and max[]: three whole words and one of
 * 8-bit lanes. 64 bytes in all, so an 8-byte allreduce's message (header and
 * payload) stays within UCX's short-message size on shared memory, the
 * cheapest path it has. The sequence number needs no field: it is in the tag. */
enum {
    ZAP_HDR_COUNT,
    ZAP_HDR_ROOT,  /* (uint64_t)(int64_t)root; -1 when the collective has none */
    ZAP_HDR_EXTRA, /* hash of v-counts, or 0 */
    ZAP_HDR_LANES, /* ZAP_LANE_* fields, 8 bits each, min/max taken lane by lane */
    ZAP_HDR_NWORDS
};
enum {
    ZAP_LANE_KIND, /* collective kind */
    ZAP_LANE_ALG,  /* algorithm (0xff: this rank failed before choosing one) */
    ZAP_LANE_DTYPE,
    ZAP_LANE_OP,
    ZAP_LANE_BAD, /* 1 when a rank found its own arguments or a message wrong */
    ZAP_LANE_N
};

typedef struct zap_coll_hdr {
    uint64_t min[ZAP_HDR_NWORDS];
    uint64_t max[ZAP_HDR_NWORDS];
} zap_coll_hdr_t;
_Static_assert(sizeof(zap_coll_hdr_t) == 64, "header size is part of the small-message budget");

/* Marks a header bad (this rank's arguments or a received message wrong). */
static inline void zap_coll_hdr_set_bad(zap_coll_hdr_t *h)
{
    h->min[ZAP_HDR_LANES] |= (uint64_t)1 << (8 * ZAP_LANE_BAD);
    h->max[ZAP_HDR_LANES] |= (uint64_t)1 << (8 * ZAP_LANE_BAD);
}

typedef enum zap_coll_kind {
    ZAP_COLL_ALLREDUCE = 1,
    ZAP_COLL_BCAST = 2,
    ZAP_COLL_SCATTERV = 3,
    ZAP_COLL_ALLGATHERV = 4,
    ZAP_COLL_COMM_CREATE = 5,
    ZAP_COLL_BARRIER = 6
} zap_coll_kind_t;

typedef struct zap_coll_op zap_coll_op_t;
typedef zap_status_t (*zap_coll_progress_fn)(zap_coll_op_t *op);

/* A wait for every rank's flag in the shared segment (allreduce_shm.c): the
 * ranks seen so far, and the liveness clock. */
typedef struct zap_coll_shm_wait {
    uint64_t seen;  /* bit q: rank q's flag holds the sequence number */
    unsigned polls;
    double check_at;
} zap_coll_shm_wait_t;

/* The recursive-doubling engine (allreduce_rd.c): header always, payload
 * optional. Used for argument agreement and as the small allreduce. */
typedef enum rd_state {
    RD_START,
    RD_FOLD_IN,      /* extra ranks hand their data to a partner */
    RD_STEP_POST,
    RD_STEP_WAIT,
    RD_FOLD_OUT,     /* partners hand the result back */
    RD_FOLD_OUT_WAIT,
    RD_DONE
} rd_state_t;

typedef struct zap_coll_rd {
    rd_state_t state;
    int phase;           /* tag phase */
    int newrank;         /* rank among the power-of-two group, -1 when folded out */
    int mask;
    size_t count;        /* payload elements (0: header only) */
    zap_dtype_t dt;
    zap_op_t op;
    zap_coll_hdr_t *acc; /* accumulated header, followed by count elements */
    zap_coll_hdr_t *in;  /* receive area, same layout */
    zap_buf_t buf;       /* acc and in for payloads too large for the inline area */
    /* The message slots for the header alone and for small host payloads
     * (while all slots fit ZAP_COLL_RD_INLINE_BYTES), so small allreduces
     * take no pool buffer at all. */
    alignas(64) unsigned char inline_area[ZAP_COLL_RD_INLINE_BYTES];
    size_t msg_bytes;
    int root;            /* broadcast mode: the root (its data travels, nothing is reduced); -1: reduce */
    int root_nr;         /* broadcast mode: newrank holding the data after the fold */
    size_t expect;       /* length the pending receive must have */
    size_t in_len;
    zap_status_t in_st;
    /* Flat mode (allreduce_direct.c): every rank's message in one round, slot
     * i of stride bytes at acc holding rank i's; the result ends in slot 0. */
    bool flat;
    size_t stride;
    size_t flat_len[ZAP_COLL_FLAT_MAX_RANKS];
    zap_status_t flat_st[ZAP_COLL_FLAT_MAX_RANKS];
    /* Shared-memory mode (allreduce_shm.c): the exchange's number in the
     * communicator's segment, the ranks whose slots hold it, the payload's
     * source (read when this rank's slot is free), the liveness clock. */
    bool shm;
    uint64_t shm_seq;
    const void *shm_src;
    zap_coll_shm_wait_t shm_wait;
} zap_coll_rd_t;

struct zap_coll_op {
    zap_request_t req;          /* first: what the caller holds */
    zap_comm_t *comm;
    uint64_t seq;
    zap_coll_kind_t kind;
    int alg;
    zap_coll_progress_fn progress; /* the algorithm, run once agreement is done */
    bool agreeing;                 /* the header exchange (op->rd) is still running */
    zap_status_t status;        /* ZAP_INPROGRESS until complete */
    zap_status_t local_error;   /* this rank's own argument error, reported after agreement */
    zap_mem_kind_t mem;         /* where the user buffers live (host, managed, device) */
    bool flat_agree;            /* the argument exchange is flat (allreduce_direct.c), not recursive doubling */
    bool shm_agree;             /* the argument exchange is in shared memory (allreduce_shm.c) */
    uint64_t shm_big_seq;       /* its large shared-memory exchange (allreduce_shm_large.c), 0: none */
    const zap_coll_shm_wait_t *shm_waiting; /* the wait its last poll left unfinished (a timeout names the
                                               first rank missing there), NULL: none */
    bool timed_out;             /* a blocking wait on it gave up */
    int nreqs;
    zap_buf_t scratch;
    zap_buf_t scratch2;
    /* Everything above is cleared when an operation is taken; the request
     * slots below are written when a request is posted (only the first nreqs
     * are ever read), so a small collective does not pay for clearing them. */
    zap_request_t *reqs[ZAP_COLL_MAX_REQS];
    size_t *rlen[ZAP_COLL_MAX_REQS];
    zap_status_t *rst[ZAP_COLL_MAX_REQS]; /* where a receive's own status goes (NULL: fail the op) */
    zap_coll_hdr_t hdr_own;      /* this rank's header */
    zap_coll_rd_t rd;            /* the header exchange (and the rd allreduce) */
    struct zap_coll_op *next;    /* active or free list */
    bool active;
    alignas(max_align_t) unsigned char alg_state[ZAP_COLL_ALG_STATE_BYTES];
};

struct zap_comm {
    zap_transport_t *t;
    int rank, size;
    int *ranks;                 /* comm rank -> transport rank; NULL for identity */
    uint32_t id;
    uint64_t seq;
    zap_coll_op_t *active_head; /* in post order */
    zap_coll_op_t *free_ops;
    zap_transport_t req_base;   /* dispatches zap_request_* calls on collective requests */
    bool sleeping_wait;         /* the transport's wait sleeps (inproc) rather than spins */
    bool owns_transport;        /* zap_comm_create_mpi: destroy closes the transport */
    zap_transport_t *checksum_t; /* ZAP_CHECKSUM=1: the wrapper this communicator made and closes */
    zap_transport_t *unwrapped;  /* the transport under checksum_t */
    unsigned spins_before_yield; /* polls of a waiting operation before it yields the CPU */
    bool oversubscribed;         /* agreed at creation: some rank has more ranks than cores on its node */
    struct zap_coll_shm *shm;    /* every rank on one host: the shared segment (coll/shm/shm.h), else NULL */
};

/* A per-call yes/no riding lane `lane` of the header's lanes word, one the
 * mismatch check ignores (above ZAP_LANE_N): the agreement combines equal
 * words unchanged and rebuilds the defined lanes of differing ones, leaving
 * this lane 0, so the agreed minimum is 1 exactly when every rank voted 1.
 * Vote after zap_coll_hdr_init; read once the agreement is done. */
static inline void zap_coll_hdr_vote(zap_coll_op_t *op, int lane, bool can)
{
    if (can) {
        op->hdr_own.min[ZAP_HDR_LANES] |= (uint64_t)1 << (8 * lane);
        op->hdr_own.max[ZAP_HDR_LANES] |= (uint64_t)1 << (8 * lane);
    }
}
static inline bool zap_coll_hdr_voted_yes(const zap_coll_op_t *op, int lane)
{
    return op->rd.acc != NULL && (op->rd.acc->min[ZAP_HDR_LANES] & ((uint64_t)1 << (8 * lane))) != 0;
}

/* The transport rank of comm rank r (what log lines name). */
static inline int zap_coll_transport_rank(const zap_comm_t *comm, int r) { return comm->ranks ? comm->ranks[r] : r; }

/* --- comm.c ---------------------------------------------------------------- */
/* Takes an operation from the free list and fills the common fields; its seq
 * is the communicator's next. */
zap_status_t zap_coll_op_get(zap_comm_t *comm, zap_coll_kind_t kind, int alg, zap_coll_op_t **op_p);
/* Makes op active and runs its first progress call. On ZAP_OK the caller
 * either returns the request or waits on it. */
zap_status_t zap_coll_op_start(zap_coll_op_t *op, zap_request_t **req_p);
/* Blocking helper: start, wait, free; returns the operation's status. */
zap_status_t zap_coll_op_run(zap_coll_op_t *op);
/* What the blocking forms do after posting: wait (at most ZAP_TIMEOUT, going
 * straight to the collective wait loop rather than zap_request_wait's
 * initial polling) and free; returns the operation's status. */
zap_status_t zap_coll_wait_free(zap_request_t *req);
/* Releases an operation that was never started. */
void zap_coll_op_discard(zap_coll_op_t *op);

static inline uint64_t zap_coll_tag(const zap_coll_op_t *op, int phase, int step)
{
    return ZAP_COLL_TAG_BIT | ((uint64_t)(op->comm->id & ZAP_COLL_COMM_ID_MAX) << 32) |
           ((op->seq & 0xffffu) << 16) | ((uint64_t)(phase & 0xf) << 12) | (uint64_t)(step & ZAP_COLL_STEP_MAX);
}

/* Posts a send/receive to comm rank peer in the current step. A receive's
 * length lands in *len_p (optional) on completion. st_p, when not NULL,
 * receives the receive's own completion status (truncation is a mismatch, not
 * an operation failure); otherwise an error fails the operation. */
zap_status_t zap_coll_send(zap_coll_op_t *op, int peer, int phase, int step, const void *buf, size_t len);
zap_status_t zap_coll_recv(zap_coll_op_t *op, int peer, int phase, int step, void *buf, size_t cap,
                           size_t *len_p, zap_status_t *st_p);
/* ZAP_INPROGRESS while any request of the step is pending; else frees them and
 * returns ZAP_OK or the first error. */
zap_status_t zap_coll_step_test(zap_coll_op_t *op);

/* Scratch from the transport's pool (size 0 gives an empty buffer). */
zap_status_t zap_coll_scratch(zap_coll_op_t *op, zap_buf_t *buf, size_t size);

/* Local data movement and reduction, dispatched by memory kind. dst may equal
 * a or b. */
void zap_coll_copy(const zap_coll_op_t *op, void *dst, const void *src, size_t bytes);
zap_status_t zap_coll_reduce(const zap_coll_op_t *op, zap_dtype_t dt, zap_op_t zop, void *dst, const void *a,
                             const void *b, size_t count);

/* --- agree (allreduce_rd.c) --------------------------------------------------- */
/* Fills op->hdr_own. */
void zap_coll_hdr_init(zap_coll_op_t *op, size_t count, zap_dtype_t dt, zap_op_t zop, int root, uint64_t extra,
                       bool bad);
/* Sets up the recursive-doubling exchange of op->hdr_own in tag phase, with
 * count elements of payload from data (NULL when count is 0). */
zap_status_t zap_coll_rd_init(zap_coll_op_t *op, int phase, const void *data, size_t count, zap_dtype_t dt,
                              zap_op_t zop);
/* The same exchange as a broadcast of bytes from root (data read on the root
 * only): a side sends its payload only once its subcube holds the root's data,
 * so the header agreement and the broadcast share log2(p) rounds. */
zap_status_t zap_coll_rd_init_bcast(zap_coll_op_t *op, int phase, const void *data, size_t bytes, int root);
/* rd_setup's flat layout and the flat exchange's progress
 * (allreduce_direct.c), used when op->flat_agree is set; the combination and
 * the verdict they share with recursive doubling (allreduce_rd.c). */
zap_status_t zap_coll_flat_setup(zap_coll_op_t *op, const void *data);
zap_status_t zap_coll_flat_progress(zap_coll_op_t *op);
zap_status_t zap_coll_rd_combine(zap_coll_op_t *op, bool in_is_lower);
/* acc's min/max fields and lanes widened by in's (the header part of a
 * combination). */
void zap_coll_hdr_merge(zap_coll_hdr_t *acc, const zap_coll_hdr_t *in);
/* The shared-memory exchange (allreduce_shm.c), used when op->shm_agree is
 * set: setup takes the exchange's number (or keeps the one op reserved and
 * has not published yet), progress publishes this rank's slot when it may
 * and waits for the others. */
zap_status_t zap_coll_shm_setup(zap_coll_op_t *op, bool reserved);
zap_status_t zap_coll_shm_progress(zap_coll_op_t *op);
/* An operation released before its shared-memory exchanges completed (an
 * error or a timeout ended it, or it was freed and could not be drained,
 * comm.c): the communicator's later exchanges fail with ZAP_ERR_CANCELED
 * instead of waiting on an order that can no longer hold. */
void zap_coll_shm_settle(zap_coll_op_t *op);
/* The first comm rank op still waits for in shared memory (a slot, a flag,
 * rank 0's reservation), or -1. */
int zap_coll_shm_first_missing(const zap_coll_op_t *op);
/* One poll of a wait for seq (or, at_least, any larger value) in every
 * rank's flag (rank q's at first + q * stride bytes): ZAP_OK once all hold
 * it, ZAP_INPROGRESS, or ZAP_ERR_PEER_FAILED naming a missing rank whose
 * process is gone (looked for every 2 ms of waiting). Records w as op's
 * unfinished wait while it returns ZAP_INPROGRESS (zap_coll_shm_first_missing). */
zap_status_t zap_coll_shm_gather(zap_coll_op_t *op, const _Atomic uint64_t *first, size_t stride, uint64_t seq,
                                 bool at_least, zap_coll_shm_wait_t *w);
/* What both large forms (allreduce_shm_large.c, bcast_shm.c) do first, once
 * the arguments agreed: take op's large exchange number (agreements complete
 * in post order on every rank, and a mismatched call takes none), then
 * ZAP_OK once this rank's previous large exchange is done and the area is
 * reserved for bytes per slot (a call beyond what is reserved grows it),
 * ZAP_INPROGRESS before, ZAP_ERR_CANCELED (logged) after an earlier one was
 * abandoned, and ZAP_ERR_NO_MEMORY, on every rank alike, when /dev/shm had
 * no room for bytes: the caller then runs a transport algorithm
 * (zap_allreduce_transport_run, zap_bcast_transport_run). */
zap_status_t zap_coll_shm_large_turn(zap_coll_op_t *op, size_t bytes);
/* The same turn for a large exchange that needs no area (the single-copy
 * allreduce): ZAP_OK, ZAP_INPROGRESS or ZAP_ERR_CANCELED. */
zap_status_t zap_coll_shm_turn(zap_coll_op_t *op);
/* The chunk a large form moves: the default after an agreement without it
 * (agreed: the GPU path's fallback), else ZAP_COLL_PIPELINE_BYTES when set,
 * written into op's header so ranks set differently report a mismatch. */
size_t zap_coll_shm_large_chunk(zap_coll_op_t *op, bool agreed);
zap_status_t zap_coll_rd_verdict(zap_coll_op_t *op);
/* Advances it: ZAP_INPROGRESS, ZAP_OK (arguments agree), ZAP_ERR_MISMATCH
 * (logged once with the differing field) or a transport error. */
zap_status_t zap_coll_rd_progress(zap_coll_op_t *op);
/* The payload after ZAP_OK. */
void *zap_coll_rd_result(zap_coll_op_t *op);
/* Releases the engine's buffer (done by the engine's owner at the end). */
void zap_coll_rd_release(zap_coll_op_t *op);

/* --- algorithm entry points ------------------------------------------------ */
typedef struct zap_coll_alg {
    const char *name;
    const char *description;
    const char *when;
} zap_coll_alg_t;

/* Allreduce algorithms, in ZAP_ALLREDUCE_ALG's order after "auto". */
enum { ZAP_AR_RD, ZAP_AR_RABENSEIFNER, ZAP_AR_RING, ZAP_AR_DIRECT, ZAP_AR_SHM, ZAP_AR_CMA, ZAP_AR_NALGS };
enum { ZAP_BC_BINOMIAL, ZAP_BC_SCATTER_ALLGATHER, ZAP_BC_CHAIN, ZAP_BC_RD, ZAP_BC_SHM, ZAP_BC_NALGS };

/* A blocking recursive-doubling allreduce that ignores ZAP_ALLREDUCE_ALG
 * (for zap's own exchanges: communicator ids). */
zap_status_t zap_coll_allreduce_rd(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t zop);
zap_status_t zap_allreduce_rabenseifner_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                             zap_dtype_t dt, zap_op_t zop);
zap_status_t zap_allreduce_ring_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                     zap_dtype_t dt, zap_op_t zop);
zap_status_t zap_allreduce_rd_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t zop);
/* Needs op->flat_agree set (the exchange it rides is the flat one), or
 * op->shm_agree (the shared-memory allreduce, which is this algorithm on the
 * shared-memory exchange). */
zap_status_t zap_allreduce_direct_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                       zap_dtype_t dt, zap_op_t zop);
/* After an agreement: the transport algorithm the table gives (recursive
 * doubling, rabenseifner, ring; binomial, chain), run as if chosen from the
 * start, for a large shared-memory call whose area could not be reserved.
 * Returns the algorithm's first progress. */
zap_status_t zap_allreduce_transport_run(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                         zap_dtype_t dt, zap_op_t zop);
zap_status_t zap_bcast_transport_run(zap_coll_op_t *op, void *buf, size_t bytes, int root);
/* Needs op->shm_agree set and count * size within the communicator's
 * shared-memory bytes (zap_comm_shared_memory_bytes). */
zap_status_t zap_allreduce_shm_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                    zap_dtype_t dt, zap_op_t zop);
/* The large form (allreduce_shm_large.c), which zap_allreduce_shm_init picks
 * above a slot's payload; agreed: the arguments were agreed already (the GPU
 * path's fallback), so the agreement runs no more and the chunk is the
 * default. */
zap_status_t zap_allreduce_shm_large_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                          zap_dtype_t dt, zap_op_t zop, bool agreed);
/* The single-copy allreduce (allreduce_cma.c): needs op->shm_agree set and
 * the communicator's segment able to (comm->shm->cma). This rank's vote (its
 * buffers are host memory) rides the agreement: zap_allreduce_cma_vote,
 * after zap_coll_hdr_init. */
zap_status_t zap_allreduce_cma_init(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                    zap_dtype_t dt, zap_op_t zop);
void zap_allreduce_cma_vote(zap_coll_op_t *op, bool can);
bool zap_allreduce_cma_voted_yes(const zap_coll_op_t *op);
/* After an agreement: the single-copy form when every rank voted yes (voted),
 * else the large shared-memory form where the vector fits its area, else the
 * transport algorithm the table gives. Returns the first progress. */
zap_status_t zap_allreduce_cma_run(zap_coll_op_t *op, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t zop, bool voted);

zap_status_t zap_bcast_binomial_init(zap_coll_op_t *op, void *buf, size_t bytes, int root);
zap_status_t zap_bcast_scatter_allgather_init(zap_coll_op_t *op, void *buf, size_t bytes, int root);
zap_status_t zap_bcast_chain_init(zap_coll_op_t *op, void *buf, size_t bytes, int root);
/* Runs the argument agreement too (the others are followed by it). */
zap_status_t zap_bcast_rd_init(zap_coll_op_t *op, void *buf, size_t bytes, int root);
/* The large shared-memory broadcast (bcast_shm.c), after the agreement;
 * agreed as for zap_allreduce_shm_large_init. The small one is
 * zap_bcast_rd_init with op->shm_agree set. */
zap_status_t zap_bcast_shm_large_init(zap_coll_op_t *op, void *buf, size_t bytes, int root, bool agreed);

/* Whether op's algorithm is the shared-memory allreduce or broadcast. */
static inline bool zap_coll_is_shm_alg(const zap_coll_op_t *op)
{
    return (op->kind == ZAP_COLL_ALLREDUCE && (op->alg == ZAP_AR_SHM || op->alg == ZAP_AR_CMA)) ||
           (op->kind == ZAP_COLL_BCAST && op->alg == ZAP_BC_SHM);
}

/* ZAP_ALLREDUCE_ALG or ZAP_BCAST_ALG as an index (0: auto), read on every
 * call (programs change them between calls) but parsed again only when its
 * environment entry changed (comm.c); an unknown name is logged and
 * ZAP_ERR_INVALID_PARAM. */
zap_status_t zap_coll_alg_setting(zap_cfg_id_t id, int *idx_p);
/* The same setting where it decides the exchange pattern the other ranks
 * expect (flat, shared memory or recursive doubling), so it is read even
 * after a local error: its index, or 0 (auto) when it cannot be read, whose
 * error then becomes *local_p unless that holds one already (every rank
 * fails the same way). */
int zap_coll_pattern_setting(zap_cfg_id_t id, zap_status_t *local_p);

/* Bytes per pipeline segment (ZAP_COLL_PIPELINE_BYTES). */
size_t zap_coll_pipeline_bytes(void);
/* The segment a pipelined algorithm uses for units (ring blocks, chain
 * messages) of unit_bytes: ZAP_COLL_PIPELINE_BYTES when it is set; otherwise
 * the largest power of two from lo up to unit_bytes / div, at most hi (and at
 * most the setting's default, 256 KiB). docs/collectives.md, Selection, has
 * the measurements behind each caller's choice. */
size_t zap_coll_segment_bytes(size_t unit_bytes, size_t div, size_t lo, size_t hi);

#endif
