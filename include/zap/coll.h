/* MPI-style collectives over the transport contract (zap/transport.h): a
 * communicator is an ordered set of ranks of one transport; allreduce,
 * broadcast, scatter(v), allgather(v) and barrier run on it, blocking or
 * non-blocking.
 *
 * Semantics shared by every collective here:
 * - Collective calls: every rank of the communicator makes the same calls in
 *   the same order (as in MPI). Several non-blocking operations may be
 *   outstanding at once; each has its own tags, so they never mix.
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
 * - Deadlines: a blocking call, and zap_request_wait on a collective request,
 *   waits at most ZAP_TIMEOUT and then returns ZAP_ERR_TIMED_OUT (the log
 *   names the operation, and the transport names the peer). After a timeout
 *   or a transport error the communicator's state is undefined: destroy it.
 * - Memory: buffers may be plain host memory, pool buffers of the
 *   communicator's transport (host, pinned or managed) or, where CUDA is
 *   built, managed or device memory; reductions on GPU-resident data run as
 *   CUDA kernels. The transport must be able to send from the buffers' kind.
 *   Scratch space comes from the transport's pool when an operation is posted;
 *   the steps never call malloc.
 * - Thread-safety: a communicator is driven by one thread at a time (its
 *   requests included); different communicators are independent.
 * - Tags: collectives use transport tags with bit 43 set (communicator id,
 *   sequence number, step: docs/collectives.md); other users of the same
 *   transport keep their tags below 2^43.
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
 * it on this rank only; the other ranks of that operation then time out.
 * Except an allreduce or broadcast carried in shared memory
 * (zap_comm_shared_memory): its free finishes it, reading and writing the
 * buffers during the call as a wait would, for at most ZAP_TIMEOUT, so the
 * other ranks complete normally.
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

typedef enum zap_dtype {
    ZAP_DT_INT8, ZAP_DT_INT16, ZAP_DT_INT32, ZAP_DT_INT64,
    ZAP_DT_UINT8, ZAP_DT_UINT16, ZAP_DT_UINT32, ZAP_DT_UINT64,
    ZAP_DT_FLOAT16, ZAP_DT_BFLOAT16, ZAP_DT_FLOAT32, ZAP_DT_FLOAT64,
    ZAP_DT_COUNT
} zap_dtype_t;

typedef enum zap_op {
    ZAP_OP_SUM, ZAP_OP_PROD, ZAP_OP_MIN, ZAP_OP_MAX,
    ZAP_OP_BAND, ZAP_OP_BOR, ZAP_OP_BXOR, /* integer types only */
    ZAP_OP_COUNT
} zap_op_t;

/* Pass as sendbuf for an in-place allreduce (recvbuf holds the input) or an
 * in-place allgather(v) (this rank's block already sits at its place in
 * recvbuf). */
#define ZAP_IN_PLACE ((const void *)1)

/* Color for zap_comm_split: this rank joins no new communicator. */
#define ZAP_COMM_UNDEFINED (-1)

/* One row of the automatic algorithm choice: calls with min_ranks <= size <=
 * max_ranks and min_bytes <= bytes < max_bytes (max_bytes SIZE_MAX: no upper
 * limit) use algorithm, unless ZAP_ALLREDUCE_ALG / ZAP_BCAST_ALG say
 * otherwise. The first matching row of a collective wins. */
typedef struct zap_coll_selection_row {
    const char *collective; /* "allreduce" or "bcast" */
    const char *algorithm;  /* a name ZAP_<COLL>_ALG accepts */
    int min_ranks, max_ranks;
    size_t min_bytes, max_bytes;
} zap_coll_selection_row_t;

ZAP_BEGIN_DECLS
/* Bytes per element of dt; 0 for an invalid dt. Constant names ("int8",
 * "float16", ...; "sum", "band", ...); NULL for an invalid value. */
ZAP_API size_t zap_dtype_size(zap_dtype_t dt);
ZAP_API const char *zap_dtype_name(zap_dtype_t dt);
ZAP_API const char *zap_op_name(zap_op_t op);
/* 1 when op is defined on dt (bitwise ops need an integer type), else 0. */
ZAP_API int zap_op_supported(zap_dtype_t dt, zap_op_t op);

/* --- communicators -------------------------------------------------------- */

/* Creates a communicator over all ranks of transport t, rank i of the
 * communicator being rank i of the transport. Collective over the transport's
 * ranks; blocks until every rank has called it (at most ZAP_TIMEOUT). t is
 * borrowed and must outlive the communicator; several communicators may share
 * one transport. Returns ZAP_OK and *comm_p (destroy with zap_comm_destroy);
 * ZAP_ERR_INVALID_PARAM for NULL arguments; ZAP_ERR_NO_MEMORY; transport
 * errors (ZAP_ERR_TIMED_OUT, ZAP_ERR_PEER_FAILED, ...). */
ZAP_API zap_status_t zap_comm_create(zap_transport_t *t, zap_comm_t **comm_p);

/* Splits comm as MPI_Comm_split: ranks passing the same color (>= 0) form a
 * new communicator, ordered by key, then by rank in comm; a rank passing
 * ZAP_COMM_UNDEFINED gets *newcomm_p = NULL. Collective over comm (blocking).
 * The new communicator borrows comm's transport and is independent of comm
 * afterwards (either may be destroyed first). Returns ZAP_OK;
 * ZAP_ERR_INVALID_PARAM for NULL arguments or a negative color other than
 * ZAP_COMM_UNDEFINED; ZAP_ERR_NO_MEMORY; errors of the exchange. */
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
/* Whether comm's ranks share a host and exchange small allreduces (and every
 * allreduce's argument agreement) through shared memory instead of the
 * transport (ZAP_COLL_SHM, docs/collectives.md): 1, else 0 (also for NULL). */
ZAP_API int zap_comm_shared_memory(const zap_comm_t *comm);
/* The largest allreduce or broadcast, in bytes, such a communicator carries
 * in shared memory: ZAP_COLL_SHM_MAX_BYTES in a slot, or the large area's
 * size (ZAP_COLL_SHM_LARGE_BYTES, capped by rank count); 0 without a
 * segment. */
ZAP_API size_t zap_comm_shared_memory_bytes(const zap_comm_t *comm);
/* Whether such a communicator's large allreduces on host memory may read the
 * other ranks' buffers directly (the single-copy algorithm, process_vm_readv;
 * ZAP_COLL_CMA, agreed at creation): 1, else 0 (also for NULL). */
ZAP_API int zap_comm_single_copy(const zap_comm_t *comm);
/* What one slot carries (one cache line of header, then the vector). */
#define ZAP_COLL_SHM_MAX_BYTES 4032

/* --- collectives ---------------------------------------------------------- */
/* Blocking forms return when this rank's part is complete (its buffers may be
 * reused) or after ZAP_TIMEOUT. Buffers are borrowed for the call. Each status:
 * ZAP_OK; ZAP_ERR_INVALID_PARAM (NULL comm, NULL buffer with a nonzero count,
 * invalid datatype/op/root, a capacity too small on this rank);
 * ZAP_ERR_UNSUPPORTED (op not defined on dt, or GPU memory without CUDA);
 * ZAP_ERR_MISMATCH (another rank's arguments differ or are invalid);
 * ZAP_ERR_NO_MEMORY (no scratch in the transport pool); ZAP_ERR_TIMED_OUT,
 * ZAP_ERR_PEER_FAILED, ZAP_ERR_TRANSPORT, ZAP_ERR_CLOSED from the transport;
 * ZAP_ERR_CUDA when a reduction kernel fails.
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
 * (elements) into recvbuf; sendbuf, counts and displs are read on the root
 * only (NULL elsewhere is fine); recvcount is the receiver's capacity in
 * elements. counts[r] > recvcount on any rank r is reported on every rank
 * (ZAP_ERR_INVALID_PARAM on r, ZAP_ERR_MISMATCH elsewhere); the receiver then
 * holds unspecified bytes. The number of elements rank r received is
 * counts[r]; there is no other way to learn it here. */
ZAP_API zap_status_t zap_scatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts,
                                  const size_t *displs, void *recvbuf, size_t recvcount, zap_dtype_t dt,
                                  int root);
ZAP_API zap_status_t zap_iscatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts,
                                   const size_t *displs, void *recvbuf, size_t recvcount, zap_dtype_t dt,
                                   int root, zap_request_t **req_p);
/* Fixed-count form: rank r receives count elements from root's
 * sendbuf + r * count. */
ZAP_API zap_status_t zap_scatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                 zap_dtype_t dt, int root);
ZAP_API zap_status_t zap_iscatter(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                  zap_dtype_t dt, int root, zap_request_t **req_p);

/* Every rank's sendcount elements land at recvbuf + displs[r] (elements) on
 * every rank; counts[r] must equal rank r's sendcount and counts must be the
 * same on every rank (displs may differ). sendbuf may be ZAP_IN_PLACE. */
ZAP_API zap_status_t zap_allgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *counts, const size_t *displs, zap_dtype_t dt);
ZAP_API zap_status_t zap_iallgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                     const size_t *counts, const size_t *displs, zap_dtype_t dt,
                                     zap_request_t **req_p);
/* Fixed-count form: rank r's count elements land at recvbuf + r * count. */
ZAP_API zap_status_t zap_allgather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf,
                                   zap_dtype_t dt);
ZAP_API zap_status_t zap_iallgather(zap_comm_t *comm, const void *sendbuf, size_t count, void *recvbuf,
                                    zap_dtype_t dt, zap_request_t **req_p);

/* Returns once every rank has entered the barrier. */
ZAP_API zap_status_t zap_barrier(zap_comm_t *comm);
ZAP_API zap_status_t zap_ibarrier(zap_comm_t *comm, zap_request_t **req_p);

/* --- algorithm selection --------------------------------------------------- */

/* The automatic-choice rows (static, never freed): allreduce's and
 * broadcast's, each in match order. Any output pointer may be NULL. Returns
 * the total number of rows. Thread-safe. For zap-info. */
ZAP_API size_t zap_coll_selection_table(const zap_coll_selection_row_t **allreduce_p, size_t *nallreduce_p,
                                        const zap_coll_selection_row_t **bcast_p, size_t *nbcast_p);
/* The algorithm the automatic choice gives collective ("allreduce", "bcast")
 * for bytes on ranks ranks, ignoring the environment; NULL for an unknown
 * collective. */
ZAP_API const char *zap_coll_auto_algorithm(const char *collective, size_t bytes, int ranks);
/* The allreduce algorithm the automatic choice gives a vector of bytes on
 * comm, its shared-memory and single-copy rules included, ignoring the
 * environment (a GPU buffer may still move GPU to GPU); NULL for a NULL comm. */
ZAP_API const char *zap_comm_allreduce_algorithm(const zap_comm_t *comm, size_t bytes);
ZAP_END_DECLS
#endif
