/* MPI-style collectives over the transport contract (zap/transport.h): a
 * communicator is a set of ranks of one transport; allreduce, broadcast,
 * scatter(v) and allgather(v) run on it, blocking or non-blocking.
 *
 * Results are deterministic: for a given rank count and algorithm every rank
 * ends with identical bytes, run after run (each algorithm fixes and documents
 * its reduction order). Arguments that differ across ranks (count, datatype,
 * op, root) are detected and reported on every rank as ZAP_ERR_MISMATCH.
 *
 * NOTE for implementers: the signatures below are the contract batch
 * verification codes against; the collectives owner completes this header
 * (non-blocking forms, split, details of each status). */
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

/* Pass as sendbuf for an in-place allreduce (recvbuf holds the input). */
#define ZAP_IN_PLACE ((const void *)1)

ZAP_BEGIN_DECLS
/* Bytes per element of dt; 0 for an invalid dt. */
ZAP_API size_t zap_dtype_size(zap_dtype_t dt);

/* A communicator over all ranks of transport t (borrowed: must outlive the
 * communicator). Collective: every rank calls it. */
ZAP_API zap_status_t zap_comm_create(zap_transport_t *t, zap_comm_t **comm_p);
ZAP_API void zap_comm_destroy(zap_comm_t *comm);
ZAP_API int zap_comm_rank(const zap_comm_t *comm);
ZAP_API int zap_comm_size(const zap_comm_t *comm);
ZAP_API zap_transport_t *zap_comm_transport(const zap_comm_t *comm);

/* recvbuf[i] = op over ranks of sendbuf[i], i < count, on every rank. */
ZAP_API zap_status_t zap_allreduce(zap_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                                   zap_dtype_t dt, zap_op_t op);
/* buf (count elements) of root is copied to every rank's buf. */
ZAP_API zap_status_t zap_bcast(zap_comm_t *comm, void *buf, size_t count, zap_dtype_t dt, int root);
/* Rank r receives counts[r] elements from root's sendbuf + displs[r]
 * (elements) into recvbuf; counts and displs are read on the root only;
 * recvcount is the receiver's capacity in elements. */
ZAP_API zap_status_t zap_scatterv(zap_comm_t *comm, const void *sendbuf, const size_t *counts,
                                  const size_t *displs, void *recvbuf, size_t recvcount, zap_dtype_t dt,
                                  int root);
/* Every rank's sendcount elements land at recvbuf + displs[r] on every rank;
 * counts[r] must equal rank r's sendcount. */
ZAP_API zap_status_t zap_allgatherv(zap_comm_t *comm, const void *sendbuf, size_t sendcount, void *recvbuf,
                                    const size_t *counts, const size_t *displs, zap_dtype_t dt);
ZAP_END_DECLS
#endif
