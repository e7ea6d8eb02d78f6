/* MPI-style collectives over the transport contract (zap/transport.h): a
 * communicator is an ordered set of ranks of one transport; allreduce,
 * broadcast, reduce, reduce_scatter(_block), scatter(v), gather(v),
 * allgather(v), alltoall(v), scan, exscan and barrier run on it, blocking or
 * non-blocking.
 *
 * Semantics shared by every collective here:
 * - Collective calls: every rank of the communicator makes the same calls in
 *   the same order (as in MPI). Several non-blocking operations may be
 *   outstanding at once (fewer than 8192 on one communicator); each has its
 *   own tags, so they never mix.
 * - Deterministic: for a given rank count and algorithm every rank ends with
 *   identical bytes, run after run (each algorithm fixes and documents its
 *   reduction order, docs/collectives.md).
 * - Agreement: every operation exchanges a header of its arguments (kind,
 *   algorithm, count, datatype, op, root, v-counts) with all ranks; arguments
 *   that differ across ranks are reported on every rank as ZAP_ERR_MISMATCH,
 *   never as a hang or an overflow. A rank whose own arguments are invalid
 *   returns ZAP_ERR_INVALID_PARAM or ZAP_ERR_UNSUPPORTED and still takes part
 *   in the exchange, so the others get ZAP_ERR_MISMATCH rather than waiting.
 *   Only a NULL communicator or NULL request pointer returns at once without
 *   communicating (the other ranks then time out).
 * - Settings: a communicator's settings (zap_comm_params_t) are fixed when it
 *   is made: explicit params first, then the ZAP_* environment read then,
 *   then the defaults of docs/config.md. They must be the same on every rank.
 * - Deadlines: a blocking call waits at most the communicator's timeout
 *   (zap_comm_params_t.timeout_s, or ZAP_TIMEOUT when it was made) and then
 *   returns ZAP_ERR_TIMED_OUT (the log names the operation and the rank it
 *   waited for); zap_request_wait_until on a collective request waits until
 *   its deadline, zap_request_wait the communicator's timeout. Without a
 *   timeout a wait has no deadline; a dead peer still ends it.
 * - Revocation (docs/faults.md, "Collective failure"): an operation that
 *   fails on one rank for a reason the others may not see (a dead peer, a
 *   timeout, a corrupt payload, a transport or local error after the
 *   agreement, a pending request freed, a communicator destroyed) fails on
 *   every rank that has not completed it, and so does every later operation
 *   on that communicator: with ZAP_ERR_PEER_FAILED when a peer died, else
 *   ZAP_ERR_REVOKED (a rank that saw the cause itself returns its own
 *   error); the log names the rank that failed it and why. No rank returns
 *   success on an operation after it learned that another rank failed it; a
 *   rank that completed it before keeps its (correct) result. The
 *   communicator is then unusable: destroy it. A communicator whose
 *   creation (zap_comm_create, zap_comm_split) failed on another rank fails
 *   its first operation the same way.
 * - Memory: buffers may be plain host memory, pool buffers of the
 *   communicator's transport (host, pinned or managed) or, where CUDA is
 *   built, managed or device memory; reductions on GPU-resident data run as
 *   CUDA kernels. The transport must be able to send from the buffers' kind.
 *   Scratch space comes from the transport's pool when an operation is posted;
 *   the steps never call malloc.
 * - Thread-safety: a communicator is driven by one thread at a time (its
 *   requests included); different communicators are independent.
 * - Tags: collectives use transport tags with bit 43 set (communicator
 *   context, sequence number, step: docs/collectives.md); other users of the
 *   same transport keep their tags below 2^43.
 * - From MPI: zap/coll_mpi.h has zap_comm_create_mpi (UCX transport and
 *   communicator in one call).
 *
 * Non-blocking forms (zap_i*) return a request that is tested, waited on and
 * freed with zap_request_test / zap_request_wait / zap_request_wait_until /
 * zap_request_free (zap/transport.h), like point-to-point requests. Progress
 * happens inside those calls (and in every zap_i* post): testing or waiting on
 * any request of a communicator advances all of its outstanding operations.
 * zap_request_received and zap_request_peer do not apply to them
 * (ZAP_ERR_INVALID_PARAM, -1). Freeing a pending collective request cancels
 * it on this rank; the other ranks fail it (ZAP_ERR_REVOKED, revocation
 * above). Except an allreduce or broadcast carried in shared memory
 * (ZAP_COMM_ATTR_SHARED_MEMORY): its free finishes it, reading and writing
 * the buffers during the call as a wait would, for at most the communicator's
 * timeout, so the other ranks complete normally.
 * A small call on such a communicator may complete inside its zap_i* post
 * (its exchange in shared memory found everything it needed there, with
 * nothing else of the communicator in flight: docs/collectives.md, "The fast
 * form"): its buffers are then already read and written, and the request is
 * one the communicator shares among such calls, complete with ZAP_OK, which
 * is tested, waited on and freed as any other (freeing it does nothing).
 * A request must be freed before its communicator is destroyed (destroy
 * cancels and frees leftovers, with a warning). */
#ifndef ZAP_COLL_H
#define ZAP_COLL_H
#include <stddef.h>
#include <stdint.h>
#include "zap/common.h"
#include "zap/status.h"
#include "zap/transport.h"

typedef struct zap_comm zap_comm_t;

/* Element types. The pair types are the C structs of MPI's MPI_FLOAT_INT,
 * MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT and
 * MPI_LONG_DOUBLE_INT (zap_float_int_t ... below, padding included), so an
 * MPI layer passes MPI's buffers through unchanged; an element is the whole
 * struct (zap_dtype_size: its sizeof). The complex types are C's
 * float _Complex and double _Complex (real part first). */
typedef enum zap_dtype {
    ZAP_DT_INT8, ZAP_DT_INT16, ZAP_DT_INT32, ZAP_DT_INT64,
    ZAP_DT_UINT8, ZAP_DT_UINT16, ZAP_DT_UINT32, ZAP_DT_UINT64,
    ZAP_DT_FLOAT16, ZAP_DT_BFLOAT16, ZAP_DT_FLOAT32, ZAP_DT_FLOAT64,
    ZAP_DT_COMPLEX64, ZAP_DT_COMPLEX128,
    ZAP_DT_FLOAT_INT, ZAP_DT_DOUBLE_INT, ZAP_DT_LONG_INT, ZAP_DT_2INT, ZAP_DT_SHORT_INT, ZAP_DT_LONG_DOUBLE_INT,
    ZAP_DT_COUNT
} zap_dtype_t;

/* The pair types' layouts (MPI's, value first, then the index). */
typedef struct zap_float_int { float v; int k; } zap_float_int_t;
typedef struct zap_double_int { double v; int k; } zap_double_int_t;
typedef struct zap_long_int { long v; int k; } zap_long_int_t;
typedef struct zap_2int { int v; int k; } zap_2int_t;
typedef struct zap_short_int { short v; int k; } zap_short_int_t;
typedef struct zap_long_double_int { long double v; int k; } zap_long_double_int_t;

/* Reduction ops. Predefined ones (zap_op_supported says on which types):
 *   sum, prod          integer, float and complex types (integers wrap)
 *   min, max           integer and float types
 *   band, bor, bxor    integer types
 *   land, lor, lxor    integer types: nonzero is true, the result is 0 or 1
 *   minloc, maxloc     pair types: the smaller (larger) value with its index;
 *                      on equal values the lower index (MPI's rule)
 * and user ops (zap_op_create), whose values start at ZAP_OP_USER_FIRST. All
 * predefined ops are commutative. */
typedef enum zap_op {
    ZAP_OP_SUM, ZAP_OP_PROD, ZAP_OP_MIN, ZAP_OP_MAX,
    ZAP_OP_BAND, ZAP_OP_BOR, ZAP_OP_BXOR,
    ZAP_OP_LAND, ZAP_OP_LOR, ZAP_OP_LXOR,
    ZAP_OP_MINLOC, ZAP_OP_MAXLOC,
    ZAP_OP_COUNT,
    ZAP_OP_USER_FIRST = 0x100000, /* user ops: ZAP_OP_USER_FIRST .. ZAP_OP_USER_LAST */
    ZAP_OP_USER_LAST = 0x10ffff
} zap_op_t;

/* A user op: inout[i] = in[i] op inout[i] for i < count elements of the
 * collective's datatype (MPI's convention for user functions: in is the
 * operand of the lower ranks). Called on this rank's thread from inside
 * collective calls and request tests; it must not call zap. ctx is the
 * pointer given to zap_op_create. */
typedef void (*zap_op_fn)(const void *in, void *inout, size_t count, void *ctx);

/* Pass as sendbuf for an in-place allreduce (recvbuf holds the input) or an
 * in-place allgather(v) (this rank's block already sits at its place in
 * recvbuf). */
#define ZAP_IN_PLACE ((const void *)1)

/* Color for zap_comm_split: this rank joins no new communicator. */
#define ZAP_COMM_UNDEFINED (-1)

/* Settings a communicator captures when it is made (zap_comm_create_ex,
 * zap_comm_create_group, zap_comm_create_subgroup). All-zero means defaults:
 * a field left 0 (NULL, ZAP_COMM_SWITCH_DEFAULT) takes the ZAP_* variable
 * named beside it as the environment holds it then, or the variable's
 * default (docs/config.md); explicit fields win over the environment. Every
 * rank of a communicator must pass the same settings (those that choose
 * algorithms and exchanges decide which messages the ranks expect). New
 * fields are appended. */
typedef enum zap_comm_switch {
    ZAP_COMM_SWITCH_DEFAULT = 0, /* the environment, else the default */
    ZAP_COMM_SWITCH_ON = 1,      /* on (shm: wherever possible, as "auto"; cma: wherever possible, in preference
                                    to the shared area even where the probe finds single-copy reads dear) */
    ZAP_COMM_SWITCH_OFF = 2
} zap_comm_switch_t;

typedef enum zap_comm_gpu_path {
    ZAP_COMM_GPU_PATH_DEFAULT = 0,
    ZAP_COMM_GPU_PATH_AUTO = 1, /* from gpu_min_bytes */
    ZAP_COMM_GPU_PATH_IPC = 2,  /* at every size */
    ZAP_COMM_GPU_PATH_OFF = 3
} zap_comm_gpu_path_t;

/* timeout_s: blocking waits have no deadline. */
#define ZAP_COMM_TIMEOUT_NONE (-1.0)
/* A byte-count field set to this means 0 bytes (0 itself means "not set"). */
#define ZAP_COMM_BYTES_ZERO UINT64_MAX

typedef struct zap_comm_params {
    const char *allreduce_alg;         /* ZAP_ALLREDUCE_ALG: an allreduce algorithm name or "auto" */
    const char *bcast_alg;             /* ZAP_BCAST_ALG */
    double timeout_s;                  /* ZAP_TIMEOUT: > 0 seconds, or ZAP_COMM_TIMEOUT_NONE */
    zap_comm_switch_t shm;             /* ZAP_COLL_SHM: a shared segment where every rank shares a host */
    uint64_t shm_large_bytes;          /* ZAP_COLL_SHM_LARGE_BYTES (0 .. 64 MiB; ZAP_COMM_BYTES_ZERO: slots only) */
    zap_comm_switch_t cma;             /* ZAP_COLL_CMA: single-copy reads of peers' memory */
    uint64_t pipeline_bytes;           /* ZAP_COLL_PIPELINE_BYTES (4 KiB .. 64 MiB); unset: per message size */
    zap_comm_gpu_path_t gpu_path;      /* ZAP_COLL_GPU_PATH */
    uint64_t gpu_min_bytes;            /* ZAP_COLL_GPU_MIN_BYTES (ZAP_COMM_BYTES_ZERO: 0) */
    zap_comm_switch_t checksum;        /* ZAP_CHECKSUM: every message of the communicator carries a CRC32C */
    zap_comm_switch_t oversubscribed;  /* default: from the launcher (OMPI_COMM_WORLD_LOCAL_SIZE, ...) and the
                                          core count; agreed over the ranks (any rank oversubscribed: all) */
    const char *reduce_alg;            /* ZAP_REDUCE_ALG: a reduce algorithm name or "auto" */
    const char *reduce_scatter_alg;    /* ZAP_REDUCE_SCATTER_ALG (reduce_scatter and reduce_scatter_block) */
    const char *gather_alg;            /* ZAP_GATHER_ALG (gather and gatherv) */
    const char *alltoall_alg;          /* ZAP_ALLTOALL_ALG (alltoall and alltoallv) */
    const char *scan_alg;              /* ZAP_SCAN_ALG */
    const char *exscan_alg;            /* ZAP_EXSCAN_ALG */
    zap_comm_switch_t hier;            /* ZAP_COLL_HIER: the hosts' hierarchy where ranks span several hosts */
} zap_comm_params_t;

/* The largest context id zap_comm_create_group takes. */
#define ZAP_COMM_CONTEXT_ID_MAX 131071u

/* zap_comm_query: what to fill (field_mask) and the answers. */
enum {
    ZAP_COMM_ATTR_RANK = 1u << 0,           /* rank */
    ZAP_COMM_ATTR_SIZE = 1u << 1,           /* size */
    ZAP_COMM_ATTR_TRANSPORT = 1u << 2,      /* transport */
    ZAP_COMM_ATTR_CONTEXT = 1u << 3,        /* context_id, context_by_zap */
    ZAP_COMM_ATTR_SET_UP = 1u << 4,         /* set_up */
    ZAP_COMM_ATTR_SHARED_MEMORY = 1u << 5,  /* shared_memory, shared_memory_bytes */
    ZAP_COMM_ATTR_SINGLE_COPY = 1u << 6,    /* single_copy, single_copy_dear */
    ZAP_COMM_ATTR_OVERSUBSCRIBED = 1u << 7, /* oversubscribed */
    ZAP_COMM_ATTR_TIMEOUT = 1u << 8,        /* timeout_s */
    ZAP_COMM_ATTR_ALGORITHMS = 1u << 9,     /* allreduce_algorithm, bcast_algorithm (input: bytes) */
    ZAP_COMM_ATTR_HOSTS = 1u << 10          /* hosts, hierarchy */
};

typedef struct zap_comm_attr {
    uint64_t field_mask; /* in: ZAP_COMM_ATTR_* to fill */
    size_t bytes;        /* in, for ZAP_COMM_ATTR_ALGORITHMS: the call size asked about */
    int rank, size;
    zap_transport_t *transport; /* borrowed */
    uint32_t context_id;  /* the id in the communicator's tags */
    int context_by_zap;   /* 1: zap assigned it (zap_comm_create, split); 0: the caller gave it */
    int set_up;           /* 1 once the setup ran (group communicators set up on their first allreduce or
                             broadcast; until then the shared-memory fields read 0) */
    int shared_memory;    /* every rank on one host, exchanging through a shared segment (ZAP_COLL_SHM) */
    size_t shared_memory_bytes; /* the largest allreduce or broadcast the segment carries; 0 without one */
    int single_copy;      /* large host allreduces may read peers' buffers directly (ZAP_COLL_CMA) */
    int oversubscribed;   /* agreed: some rank's node runs more ranks than it has cores */
    double timeout_s;     /* ZAP_COMM_TIMEOUT_NONE: no deadline */
    const char *allreduce_algorithm; /* what an allreduce (bcast: broadcast) of bytes on host memory */
    const char *bcast_algorithm;     /* runs first on this communicator under its settings (static strings) */
    int hosts;            /* the hosts its ranks are on (zap_transport_host tells them apart) */
    int hierarchy;        /* 1: its collectives go through the hosts' hierarchy (several hosts, one with several
                             ranks, ZAP_COLL_HIER allowing it: docs/collectives.md, "Across hosts") */
    int single_copy_dear; /* 1: single_copy, but a rank's probe found such reads dear on this host (ZAP_COLL_CMA
                             auto): the automatic choice reads peers' buffers only beyond the shared area */
} zap_comm_attr_t;

/* Predicates of the selection table's rows (ZAP_COLL_PRED_*): what the
 * communicator, the call and, for the memory kind, every rank's buffers must
 * (require) or must not (forbid) satisfy. */
enum {
    ZAP_COLL_PRED_SAME_HOST = 1u << 0,      /* every rank on one host, the call agreeing in the shared segment */
    ZAP_COLL_PRED_FITS_SHM = 1u << 1,       /* the call's bytes fit the segment (slots or large area) */
    ZAP_COLL_PRED_SINGLE_COPY = 1u << 2,    /* the ranks may read each other's memory (ZAP_COLL_CMA) */
    ZAP_COLL_PRED_OVERSUBSCRIBED = 1u << 3, /* some rank's node runs more ranks than cores */
    ZAP_COLL_PRED_FLAT = 1u << 4,           /* the call agrees flat (every rank with every other, one round) */
    ZAP_COLL_PRED_GPU_PATH = 1u << 5,       /* this rank wants the GPU path for the size (ZAP_COLL_GPU_PATH),
                                               a device is present */
    ZAP_COLL_PRED_HOST_MEMORY = 1u << 6,    /* every rank's buffers are host memory (voted in the agreement) */
    ZAP_COLL_PRED_GPU_MEMORY = 1u << 7,     /* every rank's buffers are managed or device memory (voted) */
    ZAP_COLL_PRED_COMMUTATIVE = 1u << 8,    /* the call's op combines operands in any order (every predefined op,
                                               a user op made commutative; calls without an op too) */
    ZAP_COLL_PRED_HOSTS = 1u << 9,          /* the ranks span several hosts, some with several ranks, and the
                                               call agrees through the hosts' hierarchy (ZAP_COLL_HIER) */
    ZAP_COLL_PRED_SLOW_READS = 1u << 10     /* single-copy reads cost several plain copies on this host (a
                                               probe at setup, agreed; ZAP_COLL_CMA=on clears it) */
};

/* One row of the selection table (zap_coll_selection_table): the automatic
 * choice takes algorithm for calls of collective on min_ranks <= size <=
 * max_ranks ranks with min_bytes <= bytes < max_bytes (max_bytes SIZE_MAX:
 * no limit) where every require predicate holds and no forbid one does. */
typedef struct zap_coll_selection_row {
    const char *collective; /* "allreduce", "bcast", "scatterv", "allgatherv", "barrier", "reduce",
                               "reduce_scatter", "gather", "alltoall", "scan", "exscan" */
    const char *algorithm;  /* its name (ZAP_<COLL>_ALG accepts those that may be forced) */
    int min_ranks, max_ranks;
    size_t min_bytes, max_bytes;
    unsigned require, forbid; /* ZAP_COLL_PRED_* */
    const char *rule;         /* a line saying when and why */
} zap_coll_selection_row_t;

ZAP_BEGIN_DECLS
/* Bytes per element of dt; 0 for an invalid dt. Constant names ("int8",
 * "float16", ...; "sum", "band", ...); NULL for an invalid value. */
ZAP_API size_t zap_dtype_size(zap_dtype_t dt);
ZAP_API const char *zap_dtype_name(zap_dtype_t dt);
ZAP_API const char *zap_op_name(zap_op_t op);
/* 1 when op is defined on dt (the table above; a user op on every type),
 * else 0. */
ZAP_API int zap_op_supported(zap_dtype_t dt, zap_op_t op);

/* Makes a user op calling fn with ctx (fn and ctx borrowed until
 * zap_op_destroy). commutative 0 promises only associativity: collectives
 * then combine operands in rank order, ((x0 op x1) op x2) ... op x(p-1),
 * with any parenthesisation (docs/collectives.md, "Reduction order"). Ranks
 * must pass ops alike: every rank a predefined op, the same one, or every
 * rank a user op with the same commutative flag (the pointers may differ,
 * which is what lets ranks in different processes take part). User ops work
 * on host and managed memory; a collective on device memory with one returns
 * ZAP_ERR_UNSUPPORTED. Thread-safe; never blocks. Returns ZAP_OK and *op_p;
 * ZAP_ERR_INVALID_PARAM for a NULL fn or op_p; ZAP_ERR_NO_RESOURCE when
 * 65536 user ops exist in the process. */
ZAP_API zap_status_t zap_op_create(zap_op_fn fn, int commutative, void *ctx, zap_op_t *op_p);
/* Ends a user op (after every collective using it completed); a predefined
 * op or a value that is not a live user op is ignored. Thread-safe. */
ZAP_API void zap_op_destroy(zap_op_t op);

/* --- communicators -------------------------------------------------------- */

/* Creates a communicator over all ranks of transport t, rank i of the
 * communicator being rank i of the transport, with the settings of params
 * (borrowed for the call; NULL: all defaults). Collective over the
 * transport's ranks; blocks until every rank has called it (at most the
 * timeout). Also sets the communicator up: agrees on oversubscription and,
 * where every rank is a process on one host, makes the shared segment. t is
 * borrowed and must outlive the communicator; several communicators may
 * share one transport. Returns ZAP_OK and *comm_p (destroy with
 * zap_comm_destroy); ZAP_ERR_INVALID_PARAM for NULL arguments or a bad
 * setting (explicit or in the environment; the log names it);
 * ZAP_ERR_NO_MEMORY; transport errors (ZAP_ERR_TIMED_OUT,
 * ZAP_ERR_PEER_FAILED, ZAP_ERR_CORRUPT in checksum mode, ...);
 * ZAP_ERR_REVOKED when another rank failed the creation first (a rank that
 * completed it before learning of that gets the communicator, whose first
 * operation then fails). */
ZAP_API zap_status_t zap_comm_create_ex(zap_transport_t *t, const zap_comm_params_t *params, zap_comm_t **comm_p);
/* zap_comm_create_ex with default settings. */
ZAP_API zap_status_t zap_comm_create(zap_transport_t *t, zap_comm_t **comm_p);

/* Creates a communicator over the nranks transport ranks listed in ranks
 * (rank i of the communicator is transport rank ranks[i]; this rank must be
 * one of them, each at most once), with context id context_id (0 ..
 * ZAP_COMM_CONTEXT_ID_MAX) given by the caller, and the settings of params
 * (NULL: defaults). Every member calls it with the same ranks, id and
 * settings; the other ranks of the transport take no part. Local: it sends
 * nothing and never blocks; the setup that zap_comm_create does at once
 * (oversubscription, shared segment) runs among the members with their first
 * allreduce or broadcast. Two communicators alive at once on one transport
 * with a member in common must have different ids (the caller's ids never
 * collide with the ids zap gives zap_comm_create and zap_comm_split, which
 * live in another part of the tag); an id may be reused once every member
 * has destroyed the communicator that had it. ranks and params are borrowed
 * for the call, t until the communicator is destroyed. Destroy with
 * zap_comm_destroy (local). Returns ZAP_OK and *comm_p;
 * ZAP_ERR_INVALID_PARAM for NULL arguments, an empty or malformed list (a
 * rank outside the transport, twice, or this rank missing), an id out of
 * range or a bad setting; ZAP_ERR_NO_MEMORY. */
ZAP_API zap_status_t zap_comm_create_group(zap_transport_t *t, const int *ranks, int nranks, uint32_t context_id,
                                           const zap_comm_params_t *params, zap_comm_t **comm_p);
/* The same over ranks of parent (rank i of the new communicator is rank
 * ranks[i] of parent) on parent's transport: the settings are parent's with
 * params' non-zero fields over them (params NULL: parent's), and
 * oversubscription is parent's where parent's setup has run. Local as
 * zap_comm_create_group; parent is borrowed for the call only (either may be
 * destroyed first, but parent's transport must outlive both). Errors as
 * zap_comm_create_group. */
ZAP_API zap_status_t zap_comm_create_subgroup(zap_comm_t *parent, const int *ranks, int nranks,
                                              uint32_t context_id, const zap_comm_params_t *params,
                                              zap_comm_t **comm_p);

/* Splits comm as MPI_Comm_split: ranks passing the same color (>= 0) form a
 * new communicator, ordered by key, then by rank in comm; a rank passing
 * ZAP_COMM_UNDEFINED gets *newcomm_p = NULL. Collective over comm (blocking).
 * The new communicator takes comm's settings, borrows comm's transport and
 * is independent of comm afterwards (either may be destroyed first).
 * Returns ZAP_OK; ZAP_ERR_INVALID_PARAM for NULL arguments or a negative
 * color other than ZAP_COMM_UNDEFINED; ZAP_ERR_NO_MEMORY; errors of the
 * exchange (those of the collectives below, ZAP_ERR_REVOKED included: comm
 * was revoked, or another rank failed the split; a rank that completed the
 * split before learning of that gets the new communicator, whose first
 * operation then fails). */
ZAP_API zap_status_t zap_comm_split(zap_comm_t *comm, int color, int key, zap_comm_t **newcomm_p);

/* Destroys a communicator (local; not collective, except for one from
 * zap_comm_create_mpi, which closes its transport too: zap/coll_mpi.h).
 * Outstanding requests are cancelled and freed with a warning. NULL is
 * accepted. */
ZAP_API void zap_comm_destroy(zap_comm_t *comm);

/* This rank, the number of ranks and the transport (borrowed). -1 / NULL for
 * a NULL comm. */
ZAP_API int zap_comm_rank(const zap_comm_t *comm);
ZAP_API int zap_comm_size(const zap_comm_t *comm);
ZAP_API zap_transport_t *zap_comm_transport(const zap_comm_t *comm);

/* Drives comm's transport and advances every outstanding operation of comm
 * (what testing or waiting on one of its requests does, without a request).
 * A wait advances only its own communicator's operations: a program with
 * operations outstanding on several communicators whose ranks depend on
 * each other's progress (an MPI layer's progress function, say) calls this
 * for each while it waits. It drives the transport even with nothing
 * outstanding: a collective that completed may still hold the last part of
 * an eager message over TCP, which leaves only on such calls, so a rank
 * that waits outside zap for peers still inside a collective calls this
 * (or zap_transport_progress) in that wait (docs/transport.md, "Progress").
 * Never blocks. Returns ZAP_OK, or ZAP_ERR_INVALID_PARAM for a NULL comm. */
ZAP_API zap_status_t zap_comm_progress(zap_comm_t *comm);

/* What a wait on a communicator runs between its polls while it waits for
 * other ranks (zap_comm_set_wait_hook). */
typedef void (*zap_wait_hook_fn)(void *ctx);

/* Sets hook (NULL: none) to be called with ctx between the polls of every
 * wait on comm that is still waiting after a short spin of its own (a
 * blocking call, or zap_request_wait on one of comm's requests): an MPI
 * layer passes its progress engine, so that its point-to-point and other
 * libraries' requests move while a rank waits in zap. Local (each rank sets
 * its own, not collective), never blocks; set it while nothing of comm is in
 * flight. The hook may test, wait on or free requests of other
 * communicators, and test or free (not wait on) comm's own; it must not
 * start an operation on comm. Not called by zap_request_test, nor by the
 * communicators zap makes inside comm (the hosts' hierarchy). ctx is
 * borrowed for as long as the hook is set. Returns ZAP_OK, or
 * ZAP_ERR_INVALID_PARAM for a NULL comm. */
ZAP_API zap_status_t zap_comm_set_wait_hook(zap_comm_t *comm, zap_wait_hook_fn hook, void *ctx);

/* Fills the fields of *attr that attr->field_mask asks for (the other fields
 * are left as they are). Local, never blocks, thread-safe as the
 * communicator is. Returns ZAP_OK; ZAP_ERR_INVALID_PARAM for NULL arguments. */
ZAP_API zap_status_t zap_comm_query(const zap_comm_t *comm, zap_comm_attr_t *attr);

/* What one slot of the shared segment carries (one cache line of header,
 * then the vector). */
#define ZAP_COLL_SHM_MAX_BYTES 4032

/* --- collectives ---------------------------------------------------------- */
/* Blocking forms return when this rank's part is complete (its buffers may be
 * reused) or after the communicator's timeout. Buffers are borrowed for the
 * call. Each status: ZAP_OK; ZAP_ERR_INVALID_PARAM (NULL comm, NULL buffer with a nonzero count,
 * invalid datatype/op/root, a capacity too small on this rank);
 * ZAP_ERR_UNSUPPORTED (op not defined on dt, or GPU memory without CUDA);
 * ZAP_ERR_MISMATCH (another rank's arguments differ or are invalid);
 * ZAP_ERR_NO_MEMORY (no scratch in the transport pool); ZAP_ERR_TIMED_OUT,
 * ZAP_ERR_PEER_FAILED (a peer died, this rank saw it or was told: the log
 * names it), ZAP_ERR_TRANSPORT, ZAP_ERR_CLOSED from the transport;
 * ZAP_ERR_CORRUPT (checksum mode: a payload failed its CRC, the log names
 * the sender); ZAP_ERR_CUDA when a reduction kernel fails; ZAP_ERR_REVOKED
 * (another rank failed this operation or an earlier one on the communicator
 * for a reason other than a dead peer, or the communicator's creation: the
 * log names that rank and its error; every later call on the communicator
 * fails too, zero-count calls included). Every one of these but
 * ZAP_ERR_INVALID_PARAM, ZAP_ERR_UNSUPPORTED and ZAP_ERR_MISMATCH revokes
 * the communicator (above).
 *
 * Non-blocking forms (suffix i) take the same arguments, borrow every buffer
 * and array until the request completes, and return ZAP_OK with *req_p (free
 * with zap_request_free) or the argument errors above (a request is returned
 * whenever the rank takes part in the exchange: errors detected locally then
 * surface from the request, as in the blocking form, so the call itself
 * returns ZAP_OK). They never block. */

/* recvbuf[i] = op over ranks (in the algorithm's fixed order) of sendbuf[i],
 * i < count, on every rank. sendbuf may be ZAP_IN_PLACE. */
ZAP_API zap_status_t zap_allreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t op);
ZAP_API zap_status_t zap_iallreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                    zap_dtype_t dt, zap_op_t op, zap_request_t **req_p);

/* buf (count elements) of root is copied to every rank's buf. */
ZAP_API zap_status_t zap_bcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root);
ZAP_API zap_status_t zap_ibcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root,
                                zap_request_t **req_p);

/* Rank r receives counts[r] elements from root's sendbuf + displs[r]
 * (elements, signed: a block may lie before sendbuf) into recvbuf; sendbuf,
 * counts and displs are read on the root only (NULL elsewhere is fine);
 * recvcount is the receiver's capacity in
 * elements. counts[r] > recvcount on any rank r is reported on every rank
 * (ZAP_ERR_INVALID_PARAM on r, ZAP_ERR_MISMATCH elsewhere); the receiver then
 * holds unspecified bytes. The number of elements rank r received is
 * counts[r]; there is no other way to learn it here. */
ZAP_API zap_status_t zap_scatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts,
                                  const ptrdiff_t *displs, void *recvbuf, size_t recvcount, zap_dtype_t dt,
                                  int root);
ZAP_API zap_status_t zap_iscatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts,
                                   const ptrdiff_t *displs, void *recvbuf, size_t recvcount, zap_dtype_t dt,
                                   int root, zap_request_t **req_p);
/* Fixed-count form: rank r receives count elements from root's
 * sendbuf + r * count. */
ZAP_API zap_status_t zap_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                 zap_dtype_t dt, int root);
ZAP_API zap_status_t zap_iscatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                  zap_dtype_t dt, int root, zap_request_t **req_p);

/* Every rank's sendcount elements land at recvbuf + displs[r] (elements,
 * signed) on every rank; counts[r] must equal rank r's sendcount and counts
 * must be the same on every rank (displs may differ). sendbuf may be
 * ZAP_IN_PLACE. */
ZAP_API zap_status_t zap_allgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt);
ZAP_API zap_status_t zap_iallgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                     const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt,
                                     zap_request_t **req_p);
/* Fixed-count form: rank r's count elements land at recvbuf + r * count. */
ZAP_API zap_status_t zap_allgather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf,
                                   zap_dtype_t dt);
ZAP_API zap_status_t zap_iallgather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf,
                                    zap_dtype_t dt, zap_request_t **req_p);

/* recvbuf[i] on root = op over ranks of sendbuf[i], i < count, combined in
 * the algorithm's fixed order (docs/collectives.md): in rank order for a
 * non-commutative op. recvbuf is read on
 * the root only (NULL elsewhere is fine); the root may pass ZAP_IN_PLACE as
 * sendbuf (recvbuf then holds its input). ZAP_IN_PLACE elsewhere is
 * ZAP_ERR_INVALID_PARAM. */
ZAP_API zap_status_t zap_reduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                                zap_op_t op, int root);
ZAP_API zap_status_t zap_ireduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                                 zap_op_t op, int root, zap_request_t **req_p);

/* The reduction of the ranks' sendbuf vectors (sum of counts elements each),
 * scattered: rank r receives counts[r] elements, those from
 * counts[0] + ... + counts[r-1] on, into recvbuf. counts must be the same on
 * every rank. sendbuf may be ZAP_IN_PLACE: recvbuf then holds the whole
 * input and receives this rank's part at its start. */
ZAP_API zap_status_t zap_reduce_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, const size_t *counts,
                                        zap_dtype_t dt, zap_op_t op);
ZAP_API zap_status_t zap_ireduce_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, const size_t *counts,
                                         zap_dtype_t dt, zap_op_t op, zap_request_t **req_p);
/* Equal parts: rank r receives elements r * count .. (r + 1) * count - 1 of
 * the reduction of size * count elements. */
ZAP_API zap_status_t zap_reduce_scatter_block(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                              zap_dtype_t dt, zap_op_t op);
ZAP_API zap_status_t zap_ireduce_scatter_block(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                               zap_dtype_t dt, zap_op_t op, zap_request_t **req_p);

/* Every rank's count elements land in root's recvbuf + r * count (recvbuf
 * read on the root only). The root may pass ZAP_IN_PLACE as sendbuf (its
 * block already in place). */
ZAP_API zap_status_t zap_gather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt,
                                int root);
ZAP_API zap_status_t zap_igather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt,
                                 int root, zap_request_t **req_p);
/* Rank r's sendcount elements land in root's recvbuf + displs[r] (elements,
 * signed); counts and displs are read on the root only. counts[r] must equal
 * rank r's sendcount: a difference is reported on every rank after the data
 * moved (ZAP_ERR_INVALID_PARAM on the root, ZAP_ERR_MISMATCH elsewhere; the
 * root's recvbuf then holds unspecified bytes in that block). */
ZAP_API zap_status_t zap_gatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                 const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, int root);
ZAP_API zap_status_t zap_igatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                  const size_t *counts, const ptrdiff_t *displs, zap_dtype_t dt, int root,
                                  zap_request_t **req_p);

/* Block j (count elements at sendbuf + j * count) of rank r lands in rank
 * j's recvbuf + r * count. sendbuf may be ZAP_IN_PLACE: recvbuf holds the
 * blocks to send and receives in their place. */
ZAP_API zap_status_t zap_alltoall(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf, zap_dtype_t dt);
ZAP_API zap_status_t zap_ialltoall(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf,
                                   zap_dtype_t dt, zap_request_t **req_p);
/* Rank r sends sendcounts[j] elements from sendbuf + sdispls[j] to rank j,
 * which receives them (recvcounts[r] of them: the two must be equal) at
 * recvbuf + rdispls[r]; displacements in elements, signed. A pair of counts
 * that differ is reported on every rank after the data moved
 * (ZAP_ERR_INVALID_PARAM on the receiver, ZAP_ERR_MISMATCH elsewhere). In
 * place (sendbuf ZAP_IN_PLACE), sendcounts and sdispls are ignored: recvbuf
 * holds what goes out, laid out as recvcounts and rdispls say. */
ZAP_API zap_status_t zap_alltoallv(zap_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                                   const ptrdiff_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                   const ptrdiff_t *rdispls, zap_dtype_t dt);
ZAP_API zap_status_t zap_ialltoallv(zap_comm_t *comm, const void *sendbuf, const size_t *sendcounts,
                                    const ptrdiff_t *sdispls, void *recvbuf, const size_t *recvcounts,
                                    const ptrdiff_t *rdispls, zap_dtype_t dt, zap_request_t **req_p);

/* Inclusive prefix: rank r's recvbuf[i] = ((x0 op x1) op ...) op xr of the
 * ranks' sendbuf[i], in rank order. sendbuf may be ZAP_IN_PLACE. */
ZAP_API zap_status_t zap_scan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                              zap_op_t op);
ZAP_API zap_status_t zap_iscan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                               zap_op_t op, zap_request_t **req_p);
/* Exclusive prefix: rank r > 0 gets x0 op ... op x(r-1); rank 0's recvbuf is
 * left as it was (MPI leaves it undefined). sendbuf may be ZAP_IN_PLACE. */
ZAP_API zap_status_t zap_exscan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count, zap_dtype_t dt,
                                zap_op_t op);
ZAP_API zap_status_t zap_iexscan(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                 zap_dtype_t dt, zap_op_t op, zap_request_t **req_p);

/* Returns once every rank has entered the barrier. */
ZAP_API zap_status_t zap_barrier(zap_comm_t *comm);
ZAP_API zap_status_t zap_ibarrier(zap_comm_t *comm, zap_request_t **req_p);

/* --- algorithm selection --------------------------------------------------- */

/* The selection table (docs/collectives.md, "Selection"), every collective's
 * rows in match order: fills rows[0 .. min(cap, total)) (rows may be NULL
 * when cap is 0) and returns the total number of rows. The strings are
 * static. Thread-safe. For zap-info. */
ZAP_API size_t zap_coll_selection_table(zap_coll_selection_row_t *rows, size_t cap);
/* The algorithm the automatic choice gives collective ("allreduce",
 * "bcast", ...) for bytes on ranks ranks of a plain communicator (no shared
 * segment, not oversubscribed, host memory); NULL for an unknown collective.
 * zap_comm_query answers for a given communicator. */
ZAP_API const char *zap_coll_auto_algorithm(const char *collective, size_t bytes, int ranks);
ZAP_END_DECLS
#endif
