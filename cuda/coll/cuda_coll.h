/* What cuda/coll offers the collectives (core/coll includes this header;
 * nothing here includes a core/coll header: the arrow points one way). Two
 * parts, each with a CUDA implementation and a stub for builds without CUDA:
 *
 * Memory kinds, copies and reductions on GPU-resident data (reduce_cuda.cu,
 * reduce_none.c): the host algorithms call these when a user buffer is
 * managed memory.
 *
 * The device side of the GPU-resident collective path (core/coll/gpu): a
 * channel per communicator (gpu_p2p.c), kernels that move and reduce the data
 * GPU to GPU through peer-mapped memory (gpu_kernels.cu), and the cache of
 * CUDA IPC mappings of users' buffers. Without CUDA, gpu_none.c reports no
 * device, so the path is never chosen.
 *
 * A channel is, per rank, one cudaMalloc'd region exported once with CUDA IPC
 * and opened once by every peer: the flags the kernels signal each other with
 * (written by peers over NVLink, polled locally) and two banks for the
 * one-shot form's inputs. Its stream orders the path's kernels of one
 * communicator: every rank launches the same kernels in the same order, and a
 * kernel's sequence number (its "ticket") is what its flags carry. Users'
 * device buffers are exported on the allocation's base (cudaIpcGetMemHandle)
 * and opened by peers once per allocation: both sides key their caches by
 * the allocation's buffer id (CU_POINTER_ATTRIBUTE_BUFFER_ID, unique in its
 * process for the process's life), so memory freed and allocated again at the
 * same address is a new entry, never a stale mapping. Managed memory and
 * memory from stream-ordered pools cannot be exported: such a buffer goes
 * through the channel's staging buffer, copied by the kernel itself. */
#ifndef ZAP_CUDA_COLL_H
#define ZAP_CUDA_COLL_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "zap/coll.h"
#include "zap/pool.h"
#include "zap/status.h"

/* --- memory kinds, copies, reductions (reduce_cuda.cu) --------------------- */
/* Where ptr lives: ZAP_MEM_DEVICE, ZAP_MEM_MANAGED, ZAP_MEM_PINNED or
 * ZAP_MEM_HOST (also for any pointer CUDA does not know, and always without
 * CUDA). Asks the CUDA driver (cudaPointerGetAttributes); never guesses. */
zap_mem_kind_t zap_cuda_ptr_kind(const void *ptr);
/* How many times zap_cuda_ptr_kind has asked the driver (tests check that
 * repeated calls on the same host buffers do not: core/coll/engine/mem.c). */
uint64_t zap_cuda_ptr_queries(void);
/* dst = src, bytes, for any combination of host, managed and device memory;
 * synchronous. ZAP_ERR_UNSUPPORTED without CUDA, ZAP_ERR_CUDA on failure. */
zap_status_t zap_cuda_copy(void *dst, const void *src, size_t bytes);
/* dst[i] = a[i] op b[i] (the CPU loops' semantics bit for bit: core/coll/reduce)
 * on the device, launch and wait. a, b and dst must be addressable by the
 * device (managed, device or mapped pinned memory). */
zap_status_t zap_cuda_reduce(zap_dtype_t dt, zap_op_t op, void *dst, const void *a, const void *b, size_t count);
/* How many zap_cuda_copy and zap_cuda_reduce calls this process has made
 * (each waits for the GPU): tests check that host-path collectives on
 * managed memory make none (core/coll/engine/mem.c). */
uint64_t zap_cuda_coll_sync_calls(void);
/* The same kernels on a given stream without waiting (stream NULL: the
 * legacy default stream). */
zap_status_t zap_cuda_reduce_async(void *stream, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                                   const void *b, size_t count);

/* --- the GPU-resident path's device side (gpu_p2p.c, gpu_kernels.cu) ------- */
#define ZAP_GPU_MAX_RANKS 8
#define ZAP_GPU_HANDLE_BYTES 64 /* sizeof(cudaIpcMemHandle_t) */
#define ZAP_GPU_BANK_BYTES ((size_t)1 << 20) /* the one-shot forms' largest call (a bank of the channel) */

/* A region of one rank's device memory as its peers open it. */
typedef struct zap_gpu_ref {
    uint64_t host;   /* zap_gpu_host_id() of the owner */
    int32_t pid;     /* the owner process */
    int32_t device;  /* the owner's device ordinal */
    uint64_t id;     /* the allocation's buffer id in the owner's process: the caches' key */
    uint64_t base;   /* the allocation's base address in the owner's process */
    uint64_t offset; /* of the region from base */
    unsigned char handle[ZAP_GPU_HANDLE_BYTES];
} zap_gpu_ref_t;

typedef struct zap_gpu_chan zap_gpu_chan_t;

/* What a launch does (gpu_kernels.cu has each kernel's shape). */
typedef enum zap_gpu_work {
    ZAP_GPU_AR_ONESHOT, /* allreduce: inputs through the banks, each rank reduces the whole vector */
    ZAP_GPU_AR_RSAG,    /* allreduce: rank r reduces segment r reading every rank's input, writes it to every output */
    ZAP_GPU_BC_ONESHOT, /* broadcast through the root's bank */
    ZAP_GPU_BC_READ     /* broadcast: every rank reads the root's exposed buffer */
} zap_gpu_work_t;

/* One launch. For the one-shot forms the channel supplies the banks; for
 * RSAG and READ in[q] and out[q] are rank q's exposed input and output in
 * this process (zap_gpu_open; this rank's own: its src and dst, or its
 * staging buffer where staged). */
typedef struct zap_gpu_launch {
    zap_gpu_work_t work;
    zap_dtype_t dt;
    zap_op_t op;
    size_t count; /* elements (broadcast: bytes, dt ZAP_DT_UINT8) */
    int root;     /* broadcast */
    const void *src; /* this rank's input (broadcast: its buffer) */
    void *dst;       /* this rank's output (broadcast: its buffer) */
    void *stage;     /* this rank's staging buffer, exposed in its place (NULL: none) */
    bool stage_in;   /* the kernel copies src into stage before peers read it */
    bool stage_out;  /* peers write into stage; the kernel copies it to dst at the end */
    bool prefetch_src, prefetch_dst; /* managed buffers: moved to the device ahead of the kernel */
    const void *in[ZAP_GPU_MAX_RANKS];
    void *out[ZAP_GPU_MAX_RANKS];
    bool ok;          /* this rank's part of the preparation succeeded (RSAG, READ) */
    double timeout_s; /* how long a kernel waits for a peer's flag before it gives up */
} zap_gpu_launch_t;

/* True when a CUDA device is visible (asked once). */
bool zap_gpu_device_present(void);
/* Whether the path can work on a buffer of this kind (managed or device). */
bool zap_gpu_can_move(zap_mem_kind_t kind);
/* Whether the GPU path's kernels (gpu_kernels.cu, combine.cuh) combine op on
 * dt: the arithmetic and bitwise predefined ops on the integer and float
 * types. Logical ops, MINLOC/MAXLOC, complex and pair types and user ops
 * reduce on the host path. */
static inline bool zap_gpu_path_combines(zap_dtype_t dt, zap_op_t op)
{
    return (int)dt <= (int)ZAP_DT_FLOAT64 && (int)op <= (int)ZAP_OP_BXOR;
}
/* An id of this host and boot (hostname and kernel boot id hashed): ranks with
 * equal ids can share device memory through IPC. */
uint64_t zap_gpu_host_id(void);

/* Makes this rank's channel (rank me of size, on the current device) and
 * describes its region in *ref for the peers. ZAP_ERR_CUDA or
 * ZAP_ERR_NO_MEMORY when the device refuses, ZAP_ERR_UNSUPPORTED without
 * CUDA. Returns the channel; zap_gpu_chan_destroy frees it. */
zap_status_t zap_gpu_chan_create(int me, int size, zap_gpu_chan_t **ch_p, zap_gpu_ref_t *ref);
/* Opens every peer's region (refs[q], q != me; refs[me] is ignored).
 * ZAP_ERR_CUDA (logged) when one cannot be opened. */
zap_status_t zap_gpu_chan_connect(zap_gpu_chan_t *ch, const zap_gpu_ref_t *refs);
/* Waits for the channel's kernels, closes the peers' regions, frees it. NULL
 * is ignored. */
void zap_gpu_chan_destroy(zap_gpu_chan_t *ch);

/* Describes [ptr, ptr + bytes) for the peers: ZAP_OK with *ref (the
 * allocation's export is cached by its buffer id), ZAP_ERR_UNSUPPORTED when
 * the memory cannot be exported (managed, a stream-ordered pool, host
 * memory): the caller stages it. */
zap_status_t zap_gpu_expose(zap_gpu_chan_t *ch, const void *ptr, size_t bytes, zap_gpu_ref_t *ref);
/* Takes the channel's staging buffer, at least bytes long, exposed in *ref.
 * It holds one call's staged data from its exposure to its kernel's end;
 * several calls may hold it at once (their kernels run one after another on
 * the channel's stream). ZAP_ERR_BUSY when it must grow while held (try
 * again once the holders released it), ZAP_ERR_NO_MEMORY or ZAP_ERR_CUDA when
 * the device refuses. */
zap_status_t zap_gpu_stage_acquire(zap_gpu_chan_t *ch, size_t bytes, void **ptr_p, zap_gpu_ref_t *ref);
void zap_gpu_stage_release(zap_gpu_chan_t *ch);
/* The address in this process of the region a peer's ref describes (the
 * owner's own address for a peer in this process); opened on first use and
 * cached by (owner, buffer id). ZAP_ERR_CUDA (logged) when it cannot be
 * opened. */
zap_status_t zap_gpu_open(zap_gpu_chan_t *ch, const zap_gpu_ref_t *ref, void **ptr_p);

/* Queues l on the channel's stream; *ticket_p is its sequence number on the
 * channel. Every rank must launch the same works in the same order.
 * ZAP_ERR_BUSY: too many launches of the channel are pending, try again
 * after testing them; ZAP_ERR_CUDA on a failed launch. */
zap_status_t zap_gpu_launch(zap_gpu_chan_t *ch, const zap_gpu_launch_t *l, uint64_t *ticket_p);
/* Whether launch ticket has finished: ZAP_INPROGRESS; ZAP_OK; ZAP_ERR_CANCELED
 * when some rank launched with ok false (every rank's kernel saw it, none
 * touched a user buffer); ZAP_ERR_TIMED_OUT when a peer's flag never came
 * (logged, naming the peer); ZAP_ERR_CUDA. Once a test has reported the
 * result, the ticket is forgotten. */
zap_status_t zap_gpu_test(zap_gpu_chan_t *ch, uint64_t ticket);
#endif
