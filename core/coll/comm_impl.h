/* The communicator's internals: an ordered set of ranks of one transport, a
 * context that keeps its tags apart from other communicators' (engine/step.h
 * has the tag layout), a sequence number per operation, the operations in
 * flight, the settings captured when it was made (comm_params.c) and what
 * its setup agreed (comm_setup.c: oversubscription, the shared segment). */
#ifndef ZAP_COLL_COMM_IMPL_H
#define ZAP_COLL_COMM_IMPL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "transport/transport_impl.h"
#include "coll/engine/kind.h"

typedef struct zap_coll_op zap_coll_op_t;

/* Large scratch buffers a communicator keeps between calls (engine/mem.c). */
#define ZAP_COLL_KEEP 2
struct zap_coll_shm;
struct zap_coll_gpu;

/* Settings captured once, when the communicator is made: explicit params,
 * else the environment then, else the table default (comm_params.c). Nothing
 * on a call's path reads the environment. */
typedef struct zap_coll_settings {
    int8_t alg[ZAP_COLL_KIND_MAX]; /* forced algorithm per kind (index in its table), -1: automatic */
    double timeout;                /* seconds a blocking wait may take; INFINITY: no deadline */
    bool shm;                      /* ZAP_COLL_SHM: a shared segment where the ranks share a host */
    bool cma;                      /* ZAP_COLL_CMA: single-copy reads where permitted */
    bool cma_always;               /* ZAP_COLL_CMA=on: preferred even where the probe finds them dear */
    bool checksum;                 /* ZAP_CHECKSUM: every message carries a CRC32C */
    int oversubscribed;            /* -1: from the launcher's environment; 0 or 1: as set */
    int gpu_path;                  /* ZAP_COLL_GPU_PATH: ZAP_COLL_GPU_* */
    uint64_t gpu_min_bytes;        /* ZAP_COLL_GPU_MIN_BYTES */
    uint64_t shm_large_bytes;      /* ZAP_COLL_SHM_LARGE_BYTES */
    size_t pipeline_bytes;         /* ZAP_COLL_PIPELINE_BYTES; 0: unset (chosen per message size) */
    bool hier;                     /* ZAP_COLL_HIER: the hosts' hierarchy where ranks span several hosts */
} zap_coll_settings_t;

/* ZAP_COLL_GPU_PATH's choices, in its order. */
enum { ZAP_COLL_GPU_AUTO, ZAP_COLL_GPU_IPC, ZAP_COLL_GPU_OFF };

/* A communicator's setup (comm_setup.c): done at creation for zap_comm_create
 * and zap_comm_split, on the first collective that needs it for group
 * communicators. */
typedef enum zap_coll_setup_state {
    ZAP_COLL_SETUP_DONE,
    ZAP_COLL_SETUP_NEEDED,
    ZAP_COLL_SETUP_RUNNING,
    ZAP_COLL_SETUP_FAILED
} zap_coll_setup_state_t;

/* The candidates of a collective's last call (engine/select.c): its
 * predicates follow from the bytes once the communicator is set up, so a
 * call of the same size reuses them instead of reading the table again. */
typedef struct zap_coll_cands_memo {
    size_t bytes;
    uint8_t n;     /* 0: nothing remembered */
    uint8_t votes; /* some candidate votes */
    uint8_t gpu;   /* this rank's buffers were GPU-resident (the GPU path's local predicate) */
    uint8_t call_flags; /* the call's zap_coll_args_t.call_flags: part of the key, like bytes */
    uint8_t fast;  /* host buffers, and the fast form's algorithm first, agreeing in shared memory (engine/fast.c) */
    uint8_t cand[8];
} zap_coll_cands_memo_t;

struct zap_comm {
    zap_transport_t *t;
    int rank, size;
    int *ranks;   /* comm rank -> transport rank; NULL for identity */
    uint32_t ctx; /* the tags' context field (engine/step.h) */
    uint64_t seq;
    zap_coll_op_t *active_head; /* in post order */
    zap_coll_op_t *free_ops;
    zap_transport_t req_base;    /* dispatches zap_request_* calls on collective requests */
    bool sleeping_wait;          /* the transport's wait sleeps (inproc) rather than spins */
    bool owns_transport;         /* zap_comm_create_mpi: destroy closes the transport */
    zap_transport_t *checksum_t; /* checksum mode: the wrapper this communicator made and closes */
    zap_transport_t *unwrapped;  /* the transport under checksum_t */
    unsigned spins_before_yield; /* polls of a waiting operation before it yields the CPU */
    zap_wait_hook_fn wait_hook;  /* zap_comm_set_wait_hook: run between a wait's polls */
    void *wait_hook_ctx;
    bool oversubscribed;         /* agreed: some rank has more ranks than cores on its node */
    bool oversubscribed_known;   /* agreed already (at creation, or from a parent) */
    struct zap_coll_shm *shm;    /* every rank on one host: the shared segment (coll/shm/shm.h), else NULL */
    size_t shm_bytes;            /* the largest allreduce or broadcast the segment carries (0: none) */
    zap_coll_setup_state_t setup;
    zap_status_t setup_status;   /* ZAP_COLL_SETUP_FAILED: why */
    zap_coll_settings_t set;
    zap_coll_cands_memo_t memo[ZAP_COLL_KIND_MAX];
    /* Revocation (engine/op.c): operations from sequence revoked_from on
     * fail on every rank (0: none), because revoke_by (a transport rank,
     * this one for its own failure) failed one with revoke_status, blaming
     * revoke_culprit (-1: none). notices_seen: the transport's notices read
     * so far (those that came before the communicator are not its); told:
     * this rank has sent its own. */
    uint64_t revoked_from;
    zap_status_t revoke_status;
    int revoke_culprit, revoke_by;
    bool revoke_told;
    bool revoke_logged; /* an operation failed for it has said why */
    bool revoke_origin; /* the revocation is of the exchange that made it (origin below) */
    unsigned notices_seen;
    /* The exchange that made this communicator (zap_comm_create's id
     * exchange, zap_comm_split's on its parent): a notice that revokes
     * origin_ctx at a sequence up to origin_seq (0: none) means some member
     * failed that exchange while this rank completed it, so this
     * communicator does not exist everywhere: it is revoked from its first
     * operation on (op.c). Sequences below origin_from are other exchanges
     * of a shared channel (earlier zap_comm_creates). origin_ranks: the
     * senders that count (the exchange's members, transport ranks; NULL:
     * every rank). notice_floor: while the id exchange runs on the creation
     * channel, the notices of earlier exchanges on it (below it) are not
     * this communicator's. */
    uint32_t origin_ctx;
    uint64_t origin_from, origin_seq;
    uint64_t notice_floor;
    int *origin_ranks;
    int origin_size;
    uint64_t shm_revoke_seen; /* the segment's revocation word as last read */
    unsigned background;      /* zero-count calls whose agreement runs after they returned (op.c) */
    struct zap_coll_gpu *gpu;    /* the GPU path's channel and launch order (coll/gpu), NULL until it is voted for */
    bool gpu_off;                /* agreed: the GPU path cannot run on this communicator (its channel failed) */
    /* The hosts' hierarchy (coll/hier/hier.h), found at the first call that
     * asks: layered -1 until then, 1 when the ranks span several hosts with
     * more than one rank on some host (and the setting allows it). */
    int8_t layered;
    struct zap_coll_hier *hier;
    /* Scratch buffers above the pool's largest class, kept from one call to
     * the next (engine/mem.c): the pool maps and registers each such buffer
     * afresh and unmaps it on free. */
    struct {
        zap_buf_t buf;
        zap_pool_t *pool;
    } keep[ZAP_COLL_KEEP];
    uint64_t fast_calls; /* calls that ran without an operation (engine/fast.c) */
    /* The request every non-blocking call that completed in the fast form
     * returns: shared, complete with ZAP_OK, and freeing it does nothing. */
    zap_transport_t done_base;
    zap_request_t done_req;
    uint32_t child_ctx; /* zap's ids for the hierarchy's communicators (this and the next), 0: none agreed yet */
};

/* The context's top bit is set for ids zap assigns itself (zap_comm_create,
 * zap_comm_split; engine/step.h has the tag layout). */
#define ZAP_COLL_CTX_ZAP (UINT32_C(1) << 17)
#define ZAP_COLL_ZAP_ID_MAX (ZAP_COLL_CTX_ZAP - 1) /* zap's own ids: 1 .. this (0: the creation exchange) */

/* The communicator's id without that bit (what log lines name). */
static inline unsigned zap_coll_comm_id(const zap_comm_t *comm) { return comm->ctx & ~ZAP_COLL_CTX_ZAP; }

/* The transport rank of comm rank r (what log lines name). */
static inline int zap_coll_transport_rank(const zap_comm_t *comm, int r) { return comm->ranks ? comm->ranks[r] : r; }

/* --- comm_params.c --------------------------------------------------------- */
/* Resolves params over inherit (a parent's settings) or, when inherit is
 * NULL, over the environment and the table defaults. ZAP_ERR_INVALID_PARAM
 * (logged, naming the field or variable) for a bad value. */
zap_status_t zap_coll_settings_resolve(const zap_comm_params_t *params, const zap_coll_settings_t *inherit,
                                       zap_coll_settings_t *set);
/* Whether this process runs on an oversubscribed node, from the launcher's
 * environment (read once per process); and whether this rank counts as
 * oversubscribed under set (the setting, else the node). */
bool zap_coll_node_oversubscribed(void);
bool zap_coll_local_oversubscribed(const zap_coll_settings_t *set);

/* --- comm.c: zap's own ids --------------------------------------------------- */
/* This process's proposal for the next id (the communicators agree on the
 * maximum of their ranks' proposals). */
uint32_t zap_coll_id_proposal(void);
/* An agreed value as an id (1 .. ZAP_COLL_ZAP_ID_MAX). */
uint32_t zap_coll_id_wrap(uint64_t v);
/* Raises this process's next proposal past agreed + n - 1: those n ids are
 * taken. */
void zap_coll_id_reserve(uint64_t agreed, unsigned n);

/* --- comm_setup.c ---------------------------------------------------------- */
/* Whether comm's ranks can have a shared segment: processes (the UCX
 * transport; in-process ranks are threads of one process and need none), two
 * or more of them. Every rank decides this alike. */
bool zap_coll_setup_segment_possible(const zap_comm_t *comm);
/* Posts comm's setup; *req_p (optional) gets its request, else it frees
 * itself when done. The caller has set comm->setup to ZAP_COLL_SETUP_NEEDED. */
zap_status_t zap_coll_setup_post(zap_comm_t *comm, zap_request_t **req_p);
#endif
