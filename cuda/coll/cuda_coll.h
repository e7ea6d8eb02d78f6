/* What cuda/coll offers the collectives (core/coll includes this header;
 * nothing here includes a core/coll header: the arrow points one way). Two
 * parts, each with a CUDA implementation and a stub for builds without CUDA:
 *
 * Memory kinds, copies and reductions on GPU-resident data (reduce_cuda.cu,
 * reduce_none.c): the host algorithms call these when a user buffer is
 * managed or device memory.
 *
 * The device side of the GPU-resident collective path (core/coll/gpu):
 * per-process staging slots, their CUDA IPC export, the opening of peers'
 * slots, and asynchronous copies and reductions on a slot's stream
 * (stage_cuda.c; without CUDA, stage_none.c reports every slot unavailable,
 * so the path always declines).
 *
 * A slot is a cudaMalloc'd device buffer (managed memory cannot be exported
 * with cudaIpcGetMemHandle), a stream, an event and a host mailbox for the
 * small messages of the path. A collective holds one slot from post to
 * completion, so several outstanding collectives never share one; when every
 * slot is held, or the device cannot allocate, the collective declines the
 * path and its ranks fall back together. Slots and peer mappings live for the
 * process (the driver releases them at exit): opening a peer's memory costs
 * milliseconds, so it is done once per peer allocation, not per call. */
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

/* --- staging slots of the GPU-resident path (stage_cuda.c) ----------------- */
#define ZAP_STAGE_SLOTS 16
#define ZAP_STAGE_HANDLE_BYTES 64 /* sizeof(cudaIpcMemHandle_t) */

/* What a rank tells its peers about its slot. */
typedef struct zap_stage_ref {
    uint64_t host;   /* zap_stage_host_id() */
    int32_t pid;
    int32_t slot;    /* index in the owner's slot table */
    int32_t device;
    uint32_t gen;    /* bumped when the slot's memory is reallocated */
    unsigned char handle[ZAP_STAGE_HANDLE_BYTES];
} zap_stage_ref_t;

typedef struct zap_stage_slot zap_stage_slot_t;

/* True when a CUDA device is visible (asked once). */
bool zap_stage_device_present(void);
/* Whether the path can move a user buffer of this kind (managed or device
 * memory; host memory stays on the host path). */
bool zap_stage_can_move(zap_mem_kind_t kind);
/* An id of this host and boot (hostname and kernel boot id hashed): ranks with
 * equal ids can share device memory through IPC. */
uint64_t zap_stage_host_id(void);

/* Takes a free slot of the current device with at least bytes of device
 * memory (allocated or grown here; bytes may be 0) and describes it in *ref.
 * ZAP_ERR_BUSY when every slot is held, ZAP_ERR_CUDA or ZAP_ERR_NO_MEMORY
 * when the device refuses, ZAP_ERR_UNSUPPORTED without CUDA. */
zap_status_t zap_stage_acquire(size_t bytes, zap_stage_slot_t **slot_p, zap_stage_ref_t *ref);
/* Gives the slot back (after its stream is idle). */
void zap_stage_release(zap_stage_slot_t *slot);
/* The slot's device memory and its host mailbox (mailbox_bytes long). */
void *zap_stage_base(zap_stage_slot_t *slot);
void *zap_stage_mailbox(zap_stage_slot_t *slot, size_t *mailbox_bytes);

/* The base address, in this process, of the peer slot ref describes: the slot
 * itself when it belongs to this process (ranks as threads), else its IPC
 * mapping, opened on first use and kept until the peer reallocates. */
zap_status_t zap_stage_peer(const zap_stage_ref_t *ref, void **base_p);

/* Asynchronous work on the slot's stream, in issue order. The stream waits
 * for work on the legacy default stream, so data a kernel wrote there is
 * complete before a copy reads it. */
zap_status_t zap_stage_copy(zap_stage_slot_t *slot, void *dst, const void *src, size_t bytes);
/* dst = a op b on the device (the kernels above); a, b, dst device-addressable. */
zap_status_t zap_stage_reduce(zap_stage_slot_t *slot, zap_dtype_t dt, zap_op_t op, void *dst, const void *a,
                              const void *b, size_t count);
/* Moves managed pages to the slot's device ahead of the copies (a hint; not
 * an error when the memory is not managed). */
void zap_stage_prefetch(zap_stage_slot_t *slot, const void *ptr, size_t bytes);
/* Marks the end of the work issued so far; zap_stage_test reports ZAP_OK once
 * it has run, ZAP_INPROGRESS before, ZAP_ERR_CUDA if it failed. */
zap_status_t zap_stage_fence(zap_stage_slot_t *slot);
zap_status_t zap_stage_test(zap_stage_slot_t *slot);
#endif
