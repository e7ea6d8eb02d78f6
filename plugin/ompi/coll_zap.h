/* mca_coll_zap: zap's collectives as an Open MPI 4.1 `coll` component.
 *
 * Open MPI picks, per communicator and per collective, the function of the
 * highest-priority component that offers one. This component offers the
 * collectives zap has (the routing table, coll_zap_route.c) and keeps the
 * functions of the components it displaced ("previous"), to which it hands
 * every call it does not take. Whether a call is taken depends only on
 * arguments MPI requires to match across ranks (collective, byte count of the
 * type signature, op, basic type, root, communicator) and on the MCA
 * parameters, which are checked to be equal on every rank, so every rank of a
 * call takes the same path.
 *
 * Pieces, one file each:
 *   coll_zap_component.c  the component: MCA parameters, open/close, stats
 *   coll_zap_gate.c       the Open MPI version and layout check
 *   coll_zap_context.c    one zap UCX transport per process, bootstrapped over
 *                         MPI_COMM_WORLD's previous allgather; progress hook;
 *                         teardown at MPI_Finalize
 *   coll_zap_module.c     per communicator: query, enable (zap communicator,
 *                         previous functions), destruct
 *   coll_zap_route.c      the routing table and the per-call decision
 *   coll_zap_types.c      MPI datatypes and ops to zap's; packing; errors
 *   coll_zap_request.c    native Open MPI requests completed by zap's progress;
 *                         the blocking wait
 *   coll_zap_<coll>.c     one file per collective family
 *
 * Threads: zap drives a communicator from one thread at a time; every call
 * into zap here holds the component lock (taken only when the program asked
 * for MPI_THREAD_MULTIPLE), and the progress hook only tries it. */
#ifndef COLL_ZAP_H
#define COLL_ZAP_H
#include "ompi_config.h"
#include "mpi.h"
#include "ompi/mca/mca.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/request/request.h"
#include "ompi/mca/coll/base/coll_base_util.h"
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"

/* --- the routing table ----------------------------------------------------- */

/* Every collective of Open MPI's coll interface that zap has or will have.
 * One row each in coll_zap_route.c; a row without functions leaves the
 * collective to the previous module. */
typedef enum coll_zap_coll {
    COLL_ZAP_ALLREDUCE,
    COLL_ZAP_BCAST,
    COLL_ZAP_ALLGATHER,
    COLL_ZAP_ALLGATHERV,
    COLL_ZAP_SCATTER,
    COLL_ZAP_SCATTERV,
    COLL_ZAP_BARRIER,
    COLL_ZAP_REDUCE,
    COLL_ZAP_REDUCE_SCATTER,
    COLL_ZAP_REDUCE_SCATTER_BLOCK,
    COLL_ZAP_GATHER,
    COLL_ZAP_GATHERV,
    COLL_ZAP_ALLTOALL,
    COLL_ZAP_ALLTOALLV,
    COLL_ZAP_SCAN,
    COLL_ZAP_EXSCAN,
    COLL_ZAP_NCOLLS
} coll_zap_coll_t;

/* Why a call went where it went (the statistics' columns). */
typedef enum coll_zap_why {
    COLL_ZAP_TAKEN,        /* zap ran it */
    COLL_ZAP_OFF,          /* coll_zap_<coll> = 0, or coll_zap_nonblocking = 0 */
    COLL_ZAP_SIZE,         /* outside coll_zap_<coll>_min_bytes.._max_bytes, or zero bytes */
    COLL_ZAP_TYPE_OP,      /* a datatype or op zap has no counterpart for (user ops included) */
    COLL_ZAP_STOPPED,      /* zap is finalized or this communicator failed */
    COLL_ZAP_CID,          /* the shape of Open MPI's own communicator-id agreement (coll_zap_route_cid) */
    COLL_ZAP_NWHY
} coll_zap_why_t;

typedef void (*coll_zap_fn_t)(void);

typedef struct coll_zap_route {
    const char *name;         /* MCA names: coll_zap_<name>, _min_bytes, _max_bytes */
    const char *bytes_means;  /* what the thresholds compare; NULL: no thresholds */
    /* The module's functions; NULL until zap has the collective. Cast to the
     * matching mca_coll_base_module_<coll>_fn_t. */
    coll_zap_fn_t blocking, nonblocking;
    /* Where they go in the module and where the previous ones sit in the
     * communicator's table (offsets, so one row serves every collective). */
    size_t mod_off, imod_off;
    size_t prev_off, prev_module_off, iprev_off, iprev_module_off;
    /* Default windows (coll_zap_window_parse's syntax); max "0": no limit. */
    const char *default_min, *default_max;
    bool default_on; /* coll_zap_<name>'s default */
} coll_zap_route_t;

extern const coll_zap_route_t coll_zap_routes[COLL_ZAP_NCOLLS];

/* A size bound that may depend on the communicator's size: "SIZE" or
 * "RANKS:SIZE,RANKS:SIZE,...", the pair with the largest RANKS not above the
 * communicator's size applying (none: 0). SIZE takes k, m, g (KiB, MiB,
 * GiB). Both are arguments every rank of a call shares. */
#define COLL_ZAP_WINDOW_MAX 8
typedef struct coll_zap_window {
    int n;
    int ranks[COLL_ZAP_WINDOW_MAX];
    size_t bytes[COLL_ZAP_WINDOW_MAX];
} coll_zap_window_t;
/* 0 and *w on success; -1 (w untouched) on a malformed text. */
int coll_zap_window_parse(const char *text, coll_zap_window_t *w);
size_t coll_zap_window_at(const coll_zap_window_t *w, int ranks);

/* The MCA values and counters of one row. */
typedef struct coll_zap_route_state {
    bool enable;
    char *min_text, *max_text;     /* coll_zap_<coll>_min_bytes, _max_bytes */
    coll_zap_window_t min, max;    /* parsed at init */
    uint64_t count[2][COLL_ZAP_NWHY]; /* [nonblocking][why] */
} coll_zap_route_state_t;

/* --- component ------------------------------------------------------------- */

typedef struct coll_zap_component {
    mca_coll_base_component_2_0_0_t super;
    int priority;
    int verbose;
    bool stats;
    bool nonblocking;
    int min_comm_size;
    char *built_for;     /* Open MPI version the component was compiled against */
    char *zap_version;
    coll_zap_route_state_t route[COLL_ZAP_NCOLLS];

    /* Set once per process. */
    bool gate_checked, gate_ok;
    bool thread_multiple;
    pthread_mutex_t lock;
} coll_zap_component_t;

OMPI_DECLSPEC extern coll_zap_component_t mca_coll_zap_component;

/* The previous function of a collective: Open MPI's choice before this one. */
typedef struct coll_zap_prev {
    coll_zap_fn_t fn;
    mca_coll_base_module_t *module;
} coll_zap_prev_t;

typedef struct coll_zap_module {
    mca_coll_base_module_t super;
    ompi_communicator_t *comm;
    zap_comm_t *zcomm;           /* NULL: this communicator is not served */
    bool failed;                 /* a collective failed: the zap communicator is unusable */
    int rank, size;
    coll_zap_prev_t prev[COLL_ZAP_NCOLLS], iprev[COLL_ZAP_NCOLLS];
    size_t min_bytes[COLL_ZAP_NCOLLS], max_bytes[COLL_ZAP_NCOLLS]; /* the windows at this size; max 0: none */
    struct coll_zap_module *next_live, *prev_live; /* modules with a zap communicator */
} coll_zap_module_t;
OBJ_CLASS_DECLARATION(coll_zap_module_t);

/* Log lines: opal_output on the component's stream, "coll:zap:" prefix. */
#define COLL_ZAP_VERBOSE(level, ...)                                                                   \
    do {                                                                                               \
        if (mca_coll_zap_component.verbose >= (level))                                                 \
            coll_zap_log(__VA_ARGS__);                                                                 \
    } while (0)
void coll_zap_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Always printed: the decline messages and errors. */
void coll_zap_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static inline void coll_zap_lock(void)
{
    if (mca_coll_zap_component.thread_multiple)
        pthread_mutex_lock(&mca_coll_zap_component.lock);
}
static inline void coll_zap_unlock(void)
{
    if (mca_coll_zap_component.thread_multiple)
        pthread_mutex_unlock(&mca_coll_zap_component.lock);
}

/* --- gate (coll_zap_gate.c) ------------------------------------------------- */
/* Whether the running Open MPI is one this build may touch: its version's
 * major.minor equals the one compiled against and the fields read here sit
 * where the headers said. Decided once (the first call); logs one decline line. */
bool coll_zap_gate_ok(void);

/* --- context (coll_zap_context.c) ----------------------------------------- */
/* Creates the process's transport at MPI_COMM_WORLD's enable (collective
 * over the world through world_module's previous allgather). Returns
 * OMPI_SUCCESS on every rank or an error on every rank. */
int coll_zap_context_init(coll_zap_module_t *world_module);
/* The transport; NULL before init, after a failed init and after teardown. */
zap_transport_t *coll_zap_transport(void);
void coll_zap_live_add(coll_zap_module_t *m);
void coll_zap_live_remove(coll_zap_module_t *m);

/* --- per-communicator zap communicator (coll_zap_module.c) ---------------- */
int coll_zap_comm_create(coll_zap_module_t *m);

/* --- routing (coll_zap_route.c) -------------------------------------------- */
/* The decision for a call of coll (nb: its non-blocking form) moving bytes
 * bytes as the row's thresholds define them; counts it unless it is taken. */
coll_zap_why_t coll_zap_route_sized(const coll_zap_module_t *m, coll_zap_coll_t coll, int nb, size_t bytes);
/* The same for a call on buffers a and b (either NULL or MPI_IN_PLACE: none),
 * where GPU-resident ones override the size window: Open MPI 4.1 below
 * without CUDA support would read device memory on the CPU, and zap runs
 * such calls GPU to GPU at every size; a program must pass GPU memory on
 * every rank of a call or on none (the route then differs between ranks).
 * The buffers' kind is asked only for a call the window would decline: one
 * it takes goes to zap whatever its memory, and zap learns that itself. */
coll_zap_why_t coll_zap_route_kind(const coll_zap_module_t *m, coll_zap_coll_t coll, int nb, size_t bytes,
                                   const void *a, const void *b);
/* COLL_ZAP_CID (counted) for a non-blocking call of the shape Open MPI's
 * own communicator-id agreement posts on a parent communicator while
 * MPI_Comm_dup/idup/split/create... run (ompi/communicator/comm_cid.c): one
 * MPI_INT, MAX or MIN for iallreduce and ireduce (op NULL: an ibcast of one
 * MPI_INT from root 0). Its later rounds are posted from Open MPI's progress
 * engine, whenever each rank's previous round completes, so ranks post them
 * in different places among the program's own collectives on that
 * communicator; zap orders every call on a communicator alike and would
 * report the program's next collective as a mismatch. Below, in Open MPI's
 * non-blocking component, they match apart from the blocking ones, as they
 * do without zap. The shape depends on arguments every rank passes alike;
 * a program's own call of that shape is served below too. Else
 * COLL_ZAP_TAKEN. */
coll_zap_why_t coll_zap_route_cid(coll_zap_coll_t coll, int nb, int count, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, int root);
/* Whether buf (not MPI_IN_PLACE) is CUDA device or managed memory. */
bool coll_zap_gpu_memory(const void *buf);
/* Whether buf is device memory, which the CPU cannot touch (no packing). */
bool coll_zap_device_memory(const void *buf);
/* Counts one call that zap took or that a later check sent back. */
void coll_zap_count(coll_zap_coll_t coll, int nb, coll_zap_why_t why);
void coll_zap_stats_print(void);
/* Installs the module's functions for every row that has them. */
void coll_zap_route_install(coll_zap_module_t *m);
/* Resolves the rows' windows for the module's communicator size. */
void coll_zap_route_windows(coll_zap_module_t *m);
/* Parses every row's window texts; false (with a message) on a bad one. */
bool coll_zap_route_parse_windows(void);
/* Saves the previous functions; false when one is missing. */
bool coll_zap_route_save_previous(coll_zap_module_t *m, ompi_communicator_t *comm);
void coll_zap_route_release_previous(coll_zap_module_t *m);

/* --- types (coll_zap_types.c) ---------------------------------------------- */
/* What coll_zap_reduction_type gives for a user op zap can call: bind it to
 * the call's request with coll_zap_bind_user_op. */
#define COLL_ZAP_USER_OP ZAP_OP_COUNT
/* A reduction's element type and op in zap's terms: *dt_p, *op_p and the
 * number of zap elements in count items of dtype. false when zap has no
 * counterpart (an op undefined on the type, a mixed or unsupported basic
 * type, a user op zap cannot call: the file's comment has the list).
 * Depends only on the type signature and the op. */
bool coll_zap_reduction_type(ompi_datatype_t *dtype, int count, struct ompi_op_t *op, zap_dtype_t *dt_p,
                             zap_op_t *zop_p, size_t *nelems_p);

/* Whether dtype is one of MPI's pair types whose buffers zap reads as they
 * are (its layout is zap's pair struct: no packing, gaps and all). */
bool coll_zap_pair_layout(ompi_datatype_t *dtype);
/* Bytes of the type signature of count items. */
static inline size_t coll_zap_bytes(ompi_datatype_t *dtype, int count)
{
    return count > 0 ? (size_t)count * dtype->super.size : 0;
}
/* Whether count items of dtype are one contiguous run of bytes, and where
 * it starts. */
static inline bool coll_zap_dense(ompi_datatype_t *dtype, int count)
{
    return count <= 0 || opal_datatype_is_contiguous_memory_layout(&dtype->super, count);
}
/* The same for a reduction's buffer: MPI's pair types count as one run too,
 * since zap reads their C structs, gaps included (coll_zap_pair_layout). */
static inline bool coll_zap_reduce_dense(ompi_datatype_t *dtype, int count)
{
    return coll_zap_dense(dtype, count) || coll_zap_pair_layout(dtype);
}
static inline char *coll_zap_start(const void *buf, ompi_datatype_t *dtype)
{
    return (char *)buf + dtype->super.true_lb;
}
/* Packs count items of dtype at buf into dst (coll_zap_bytes of them);
 * unpacks src into count items of dtype at buf. OMPI_SUCCESS or an error. */
int coll_zap_pack(void *dst, const void *buf, int count, ompi_datatype_t *dtype);
int coll_zap_unpack(void *buf, int count, ompi_datatype_t *dtype, const void *src);
/* A zap status as an MPI error class (MPI_SUCCESS for ZAP_OK). */
int coll_zap_error_class(zap_status_t st);

/* --- requests and waiting (coll_zap_request.c) ---------------------------- */
typedef struct coll_zap_req coll_zap_req_t;
/* Work after zap completed a call successfully (unpacking into the user's
 * layout), and what to free then. */
typedef int (*coll_zap_finish_fn)(coll_zap_req_t *r);
typedef void (*coll_zap_user_fn_t)(void *, void *, int *, struct ompi_datatype_t **);
struct coll_zap_req {
    /* Open MPI's MPI layer takes every non-blocking collective's request for
     * an ompi_coll_base_nbc_request_t: after the call returns it keeps a
     * user op or a derived datatype alive by writing them and its own
     * completion callback into the fields that follow the ompi_request_t
     * there (ompi_coll_base_retain_op / _datatypes). Those fields are
     * reserved here so they land in the request's own room. */
    union {
        ompi_request_t super;
        ompi_coll_base_nbc_request_t nbc;
    };
    zap_request_t *zreq;
    coll_zap_module_t *module;
    coll_zap_coll_t coll;
    coll_zap_finish_fn finish;   /* NULL: nothing to do */
    void *tmp;                   /* freed at completion */
    size_t *counts;              /* freed at completion (v-forms) */
    ptrdiff_t *displs;           /* freed at completion (v-forms): bytes, signed */
    /* finish's arguments */
    void *ubuf;
    int ucount;
    ompi_datatype_t *udtype;
    const int *ucounts, *udispls;
    ptrdiff_t uextent;
    int nblocks;
    double deadline;             /* zap_clock_now() after which it times out; 0: none */
    /* A local failure after the call was routed (no scratch memory): the
     * call still reaches zap, with an argument zap refuses, so the other
     * ranks see a mismatch instead of waiting; this rank reports local_rc. */
    int local_rc;
    bool user_freed;             /* MPI_Request_free before completion */
    /* A user op the call runs: zap's op wrapping MPI's function (destroyed
     * with the request's scratch). */
    bool has_uop;
    zap_op_t uop;
    coll_zap_user_fn_t uop_fn;
    ompi_datatype_t *uop_dtype;
    coll_zap_req_t *prev_pending, *next_pending;
};

/* Makes the zap op that calls op's C function for r's call (dtype is
 * passed to it); *zop_p is zap's op. MPI_SUCCESS or MPI_ERR_NO_MEM. */
int coll_zap_bind_user_op(coll_zap_req_t *r, struct ompi_op_t *op, ompi_datatype_t *dtype, zap_op_t *zop_p);

int coll_zap_request_init(void);
void coll_zap_request_fini(void);
/* A request for a call on m, its scratch fields cleared. NULL: no memory. */
coll_zap_req_t *coll_zap_req_get(coll_zap_module_t *m, coll_zap_coll_t coll);
/* Gives a request that never reached zap back (the call falls back). */
void coll_zap_req_put(coll_zap_req_t *r);
/* The posted zap request is r's now: blocking, waits for it driving
 * opal_progress, runs finish and returns the MPI result (r is released);
 * non-blocking, hands r to the progress hook and returns it to the caller. */
int coll_zap_req_wait(coll_zap_req_t *r);
void coll_zap_req_start(coll_zap_req_t *r, ompi_request_t **request);
/* Whether a call (request NULL: blocking) runs zap's blocking form rather
 * than posting and waiting here. Blocking calls do when no other thread can
 * call in: zap's own wait runs opal_progress through the zap communicator's
 * wait hook (coll_zap_wait_hook), and its blocking form completes a small
 * call on one host without an operation (the fast form). Under
 * MPI_THREAD_MULTIPLE the lock is not held across a wait, so the call is
 * posted and waited on here. */
static inline bool coll_zap_direct(ompi_request_t **request)
{
    return request == NULL && !mca_coll_zap_component.thread_multiple;
}
/* zap_<fn>(...) for a direct call, else zap_i<fn>(..., &r->zreq). */
#define COLL_ZAP_POST(request, r, fn, ...)                                                             \
    (coll_zap_direct(request) ? zap_##fn(__VA_ARGS__) : zap_i##fn(__VA_ARGS__, &(r)->zreq))
/* The zap communicators' wait hook: opal_progress, so Open MPI's
 * point-to-point and other components move while a rank waits in zap. */
void coll_zap_wait_hook(void *ctx);
/* After COLL_ZAP_POST (st: what it returned): a direct call's result, the
 * post's failure, the blocking wait's result, or MPI_SUCCESS with *request
 * (request NULL: blocking); r is released unless it went to *request. */
int coll_zap_req_posted(coll_zap_req_t *r, zap_status_t st, ompi_request_t **request);
/* The post itself failed with st: releases r, marks the module as failed
 * where the zap communicator is now unusable, returns the MPI class. */
int coll_zap_req_post_failed(coll_zap_req_t *r, zap_status_t st);
/* opal_progress hook: completes pending requests; events seen. With none
 * pending it still drives the transport set here, one whose completed sends
 * may hold bytes that leave only on progress calls
 * (ZAP_CAP_SENDS_NEED_PROGRESS): a blocking zap collective that returned,
 * then an Open MPI wait for a peer still receiving its last message, must
 * not wait for ever. NULL: nothing to drive (the default). */
int coll_zap_progress(void);
void coll_zap_progress_idle(zap_transport_t *t);

/* --- the collectives -------------------------------------------------------- */
int coll_zap_allreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                       ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_iallreduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                        ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_bcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                   mca_coll_base_module_t *module);
int coll_zap_ibcast(void *buf, int count, ompi_datatype_t *dtype, int root, ompi_communicator_t *comm,
                    ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_allgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_iallgather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                        ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                        mca_coll_base_module_t *module);
int coll_zap_allgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                        const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                        mca_coll_base_module_t *module);
int coll_zap_iallgatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                         const int *disps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                         ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_scatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_iscatter(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                      ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                      mca_coll_base_module_t *module);
int coll_zap_scatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdtype, void *rbuf,
                      int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                      mca_coll_base_module_t *module);
int coll_zap_iscatterv(const void *sbuf, const int *scounts, const int *disps, ompi_datatype_t *sdtype,
                       void *rbuf, int rcount, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                       ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_reduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_ireduce(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                     ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                            struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_ireduce_scatter(const void *sbuf, void *rbuf, const int *rcounts, ompi_datatype_t *dtype,
                             struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                             mca_coll_base_module_t *module);
int coll_zap_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                  struct ompi_op_t *op, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_ireduce_scatter_block(const void *sbuf, void *rbuf, int rcount, ompi_datatype_t *dtype,
                                   struct ompi_op_t *op, ompi_communicator_t *comm, ompi_request_t **request,
                                   mca_coll_base_module_t *module);
int coll_zap_gather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                    ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_igather(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                     ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm, ompi_request_t **request,
                     mca_coll_base_module_t *module);
int coll_zap_gatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                     const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                     mca_coll_base_module_t *module);
int coll_zap_igatherv(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, const int *rcounts,
                      const int *disps, ompi_datatype_t *rdtype, int root, ompi_communicator_t *comm,
                      ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_alltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                      ompi_datatype_t *rdtype, ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_ialltoall(const void *sbuf, int scount, ompi_datatype_t *sdtype, void *rbuf, int rcount,
                       ompi_datatype_t *rdtype, ompi_communicator_t *comm, ompi_request_t **request,
                       mca_coll_base_module_t *module);
int coll_zap_alltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdtype, void *rbuf,
                       const int *rcounts, const int *rdisps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                       mca_coll_base_module_t *module);
int coll_zap_ialltoallv(const void *sbuf, const int *scounts, const int *sdisps, ompi_datatype_t *sdtype, void *rbuf,
                        const int *rcounts, const int *rdisps, ompi_datatype_t *rdtype, ompi_communicator_t *comm,
                        ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_scan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                  ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_iscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                   ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_exscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                    ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_iexscan(const void *sbuf, void *rbuf, int count, ompi_datatype_t *dtype, struct ompi_op_t *op,
                     ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
int coll_zap_barrier(ompi_communicator_t *comm, mca_coll_base_module_t *module);
int coll_zap_ibarrier(ompi_communicator_t *comm, ompi_request_t **request, mca_coll_base_module_t *module);
#endif
