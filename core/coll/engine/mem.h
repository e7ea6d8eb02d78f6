/* Local data work of the collectives, dispatched by memory kind: scratch
 * buffers, copies and reductions (host, pinned and managed data on the CPU,
 * device data through cuda/coll: mem.c says why), the kind of a user
 * buffer, and the segment size of pipelined algorithms. */
#ifndef ZAP_COLL_ENGINE_MEM_H
#define ZAP_COLL_ENGINE_MEM_H
#include <stddef.h>
#include "coll/comm_impl.h"
#include "coll/engine/op.h"

/* Scratch for op (size 0 gives an empty buffer): a host pool when op's data
 * is touched by the CPU (any kind but device) and the transport's pool is
 * managed memory, else the transport's pool. Logged on failure. */
zap_status_t zap_coll_scratch(zap_coll_op_t *op, zap_buf_t *buf, size_t size);
/* Host memory whatever op's kind (the GPU path's small messages). Logged on
 * failure. */
zap_status_t zap_coll_host_scratch(zap_coll_op_t *op, zap_buf_t *buf, size_t size);
/* Gives back a buffer from zap_coll_scratch or zap_coll_host_scratch (empty
 * buffers too). One above the pool's largest class stays with comm for its
 * next calls, up to ZAP_COLL_KEEP of them (the smallest goes back first)
 * and 256 MiB over all communicators of the process; the rest goes back to
 * its pool. */
void zap_coll_scratch_free(zap_comm_t *comm, zap_buf_t *buf);
/* Gives every kept buffer back to its pool (communicator destroy, and before
 * a scratch allocation is retried when the pool's budget refused it). */
void zap_coll_scratch_drop(zap_comm_t *comm);

/* Before a candidate that does not run on device buffers itself: when op's
 * kind is device memory, its data moves into a host copy (op->host_stage)
 * and op runs there as on host memory; zap_coll_host_unstage copies the
 * result back into the user's output once op completed. Allreduce and
 * broadcast only (ZAP_ERR_UNSUPPORTED for the other collectives). */
zap_status_t zap_coll_host_stage(zap_coll_op_t *op);
zap_status_t zap_coll_host_unstage(zap_coll_op_t *op);
/* The kind of a call whose buffers are of kinds a and b: device if either
 * is, else managed if either is, else host. */
zap_mem_kind_t zap_coll_mem_kind_of(zap_mem_kind_t a, zap_mem_kind_t b);

/* dst = src (bytes), or dst = a op b (count elements), by op's memory kind.
 * dst may equal src, a or b. */
void zap_coll_copy(const zap_coll_op_t *op, void *dst, const void *src, size_t bytes);
zap_status_t zap_coll_reduce(const zap_coll_op_t *op, zap_dtype_t dt, zap_op_t zop, void *dst, const void *a,
                             const void *b, size_t count);

/* Memory kind of the user buffer [ptr, ptr+len): the transport pool's kind
 * when the buffer is pool memory, else what CUDA reports (host without CUDA);
 * pinned counts as host. */
zap_mem_kind_t zap_coll_mem_kind(zap_comm_t *comm, const void *ptr, size_t len);
/* What CUDA reports for [ptr, ptr+len) (host without CUDA; pinned counts as
 * host), answered without asking where this thread has seen the range as
 * host memory since the address space last lost a mapping: a layer above zap
 * that routes by memory kind (the Open MPI component) pays the driver's
 * query once per buffer, as zap does. */
zap_mem_kind_t zap_coll_ptr_kind(const void *ptr, size_t len);

/* The segment a pipelined algorithm uses for units (ring blocks, chain
 * messages, large shared-memory chunks) of unit_bytes: the communicator's
 * pipeline setting when set; otherwise the largest power of two from lo up to
 * unit_bytes / div, at most hi (and at most the setting's default, 256 KiB).
 * docs/collectives.md, "Selection", says why each caller picks its bounds. */
size_t zap_coll_segment_bytes(const zap_comm_t *comm, size_t unit_bytes, size_t div, size_t lo, size_t hi);
#endif
