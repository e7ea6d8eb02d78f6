/* The operation every collective runs as (docs/architecture.md, "The life
 * of one collective call").
 *
 * A collective is posted (engine/select.c: arguments checked, candidates
 * chosen, the first one's init run), agrees on its arguments (agree/), then
 * runs its algorithm's progress function, a state machine, until it
 * completes; a blocking call posts and waits. The operation owns the
 * transport requests of its current step (at most ZAP_COLL_MAX_REQS) and one
 * or two scratch buffers drawn from the transport's pool when it is posted,
 * so the steps themselves never allocate. Operations come from a
 * per-communicator free list (grown with malloc when one is posted while all
 * are busy) and stay on an active list in post order; progress on any of
 * them advances all of them, in post order, because a rank waiting on one
 * must not starve another that a peer is waiting on.
 *
 * Collective requests are zap_request_t's: each communicator carries a small
 * pseudo transport whose ops table answers test, wait and free for its
 * operations (op.c). Not thread-safe: one thread drives a communicator. */
#ifndef ZAP_COLL_ENGINE_OP_H
#define ZAP_COLL_ENGINE_OP_H
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "transport/transport_impl.h"
#include "coll/agree/agree.h"
#include "coll/engine/kind.h"

#define ZAP_COLL_MAX_REQS 64 /* the flat exchange posts 2 (p - 1) at once */
#define ZAP_COLL_ALG_STATE_BYTES 256
#define ZAP_COLL_MAX_CANDS 8

typedef zap_status_t (*zap_coll_progress_fn)(zap_coll_op_t *op);
struct zap_coll_desc;

/* The call as its entry point received it, kept for every candidate that
 * may run it (the first, and any that follows a decline). Each collective
 * reads the fields it has. */
typedef struct zap_coll_args {
    const void *src;  /* allreduce: sendbuf (recvbuf when in place); scatterv: the root's sendbuf;
                         allgatherv: sendbuf, NULL in place */
    void *dst;        /* allreduce, scatterv, allgatherv: recvbuf; bcast: buf */
    size_t count;     /* allreduce, bcast: elements; scatterv: recvcount; allgatherv: sendcount */
    size_t fixed;     /* scatter (counts NULL): every rank's count */
    size_t bytes;     /* what the selection weighs: count * datatype size */
    const size_t *counts;   /* v-forms; NULL for the fixed-count forms */
    const ptrdiff_t *displs; /* v-forms: elements, signed */
    const size_t *rcounts;    /* alltoallv: the receive side's (counts/displs are the send side's) */
    const ptrdiff_t *rdispls;
    zap_dtype_t dt;
    zap_op_t op;
    int root;         /* -1 when the collective has none */
    zap_mem_kind_t mem; /* the operation's memory kind: device if any buffer is, else managed if any is, else host */
    zap_mem_kind_t src_mem, dst_mem; /* where the input and the output live (the GPU path needs both on a GPU) */
    uint64_t hdr_count, hdr_extra; /* the argument header's count and extra words */
    /* What the call's op rules out (ZAP_COLL_CALL_*, engine/select.h): set by
     * the reducing collectives' entries, 0 for the rest. */
    uint8_t call_flags;
    /* A zero-count call by MPI's rules (the count every rank must pass alike
     * is 0): it completes locally, with no agreement and no message
     * (docs/collectives.md, "Zero counts"). Set by the entries. */
    bool empty;
} zap_coll_args_t;

struct zap_coll_op {
    zap_request_t req; /* first: what the caller holds */
    zap_comm_t *comm;
    const struct zap_coll_desc *desc;
    uint64_t seq;
    zap_coll_kind_t kind;
    int alg;                       /* the candidate running now (an index in desc->algs) */
    zap_coll_form_t form;          /* how this call agrees (desc->form) */
    zap_coll_progress_fn progress; /* the algorithm, run once agreement is done */
    void (*release)(zap_coll_op_t *op); /* frees what the algorithm holds besides scratch (optional) */
    bool agreeing;   /* the argument exchange (op->agree) is still running */
    bool agreed;     /* the arguments are agreed: a candidate set up now runs without agreeing */
    bool deferred;   /* posted before its communicator's setup finished: not begun yet */
    bool internal;   /* zap's own (a communicator's setup): freed when it completes */
    bool timed_out;  /* given up on (a wait's deadline, an abandoned hierarchical stage): free does not drain it */
    bool polled;     /* it has had a progress call (later ones look for a revocation first) */
    bool whole_in_agreement; /* the agreement carries the whole call: its progress only copies the result */
    bool background; /* a zero-count call: its caller's request completed at once, the agreement runs on */
    int culprit;     /* the transport rank its failure blames (a dead or missing peer), -1: none */
    /* Given up on by a parent operation that failed for a lost peer
     * (zap_coll_hier_abandon): what freeing it early tells the other members,
     * with culprit, instead of "cancelled". ZAP_OK: nothing of the kind. */
    zap_status_t abandoned_for;
    zap_status_t status;      /* ZAP_INPROGRESS until complete */
    zap_status_t local_error; /* this rank's own argument error, reported after agreement */
    zap_mem_kind_t mem;       /* where the user buffers live (host, managed, device) */
    uint8_t ncand, icand;     /* the candidates (engine/select.h) and the one running */
    uint8_t cand[ZAP_COLL_MAX_CANDS];
    uint64_t shm_big_seq;     /* its large shared-memory exchange (coll/shm), 0: none */
    const zap_coll_shm_wait_t *shm_waiting; /* the wait its last poll left unfinished (a timeout names the
                                               first rank missing there), NULL: none */
    int nreqs;
    zap_buf_t scratch;
    zap_buf_t scratch2;
    zap_buf_t host_stage;     /* device buffers under a host algorithm: the call runs on this host copy */
    void *stage_user;         /* the user's output buffer the copy goes back to when it completes */
    /* Everything above is cleared when an operation is taken; the request
     * slots below are written when a request is posted (only the first nreqs
     * are ever read), the arguments when the call is posted, so a small
     * collective does not pay for clearing them. */
    zap_request_t *reqs[ZAP_COLL_MAX_REQS];
    size_t *rlen[ZAP_COLL_MAX_REQS];
    zap_status_t *rst[ZAP_COLL_MAX_REQS]; /* where a receive's own status goes (NULL: fail the op) */
    zap_coll_args_t args;
    zap_coll_hdr_t hdr_own; /* this rank's header */
    zap_coll_agree_t agree; /* the argument exchange (and payloads that ride it) */
    struct zap_coll_op *next; /* active or free list */
    bool active;
    alignas(max_align_t) unsigned char alg_state[ZAP_COLL_ALG_STATE_BYTES];
};

/* The ops table of every communicator's pseudo transport (req_base): what
 * zap_request_test/wait/free do on collective requests. */
extern const zap_transport_ops_t zap_coll_req_ops;

/* Takes an operation from the free list and fills the common fields; its seq
 * is the communicator's next. ZAP_ERR_NO_MEMORY. */
zap_status_t zap_coll_op_get(zap_comm_t *comm, zap_coll_kind_t kind, zap_coll_op_t **op_p);
/* Makes op active and runs its first progress call; *req_p (optional) is its
 * request. */
void zap_coll_op_start(zap_coll_op_t *op, zap_request_t **req_p);
/* Completes op at once with local (ZAP_OK, or this rank's argument error),
 * or ZAP_ERR_REVOKED/PEER_FAILED when its communicator is revoked: a
 * zero-count call, which sends nothing. *req_p (optional) is its request,
 * to be freed as any other. */
void zap_coll_op_complete_local(zap_coll_op_t *op, zap_status_t local, zap_request_t **req_p);
/* Blocking helper: start, wait, free; returns the operation's status. */
zap_status_t zap_coll_op_run(zap_coll_op_t *op);
/* What the blocking forms do after posting: wait (at most the communicator's
 * timeout, going straight to the collective wait loop rather than
 * zap_request_wait's initial polling) and free; returns the status. */
zap_status_t zap_coll_wait_free(zap_request_t *req);
/* Turns op into a header-only participant with its header marked bad, after
 * a local failure st: the other ranks then report ZAP_ERR_MISMATCH and this
 * one st, instead of anyone waiting for messages that never come. */
void zap_coll_op_fail_local(zap_coll_op_t *op, zap_status_t st);
/* Whether comm has nothing in flight and no revocation known or arriving
 * (one load each for the transport's notices and the segment's word): a
 * call may then run without an operation (engine/fast.c). */
bool zap_coll_op_quiet(zap_comm_t *comm);
/* Cancels and frees every operation still active (a communicator being
 * destroyed); returns how many there were. */
int zap_coll_op_cancel_all(zap_comm_t *comm);
/* Frees the communicator's free list. */
void zap_coll_op_free_list(zap_comm_t *comm);
/* The engine's entry for a deferred operation once its communicator is set
 * up (engine/select.c). */
void zap_coll_op_begin(zap_coll_op_t *op);
#endif
