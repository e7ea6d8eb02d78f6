/* What the verification job asks of CUDA (docs/verify.md, "Where received
 * segments live"): internal to zap, included by core/verify, which never
 * includes a CUDA header itself. Built from device_cuda.c and ring_cuda.c
 * when zap has CUDA, and from device_none.c otherwise, where there is no
 * device (-1, NULL, ZAP_ERR_UNSUPPORTED), so callers take their host paths.
 *
 * A failed CUDA call is never left pending: its error is cleared, so the
 * next call of the thread does not report it again. */
#ifndef ZAP_VERIFY_DEVICE_H
#define ZAP_VERIFY_DEVICE_H
#include <stddef.h>
#include "zap/status.h"

/* ---- the device of the calling thread, device buffers -------------------- */

/* The calling thread's current CUDA device, or -1 (no CUDA, no device, or
 * the query failed). */
int zap_verify_device_current(void);

/* Makes dev (>= 0) the calling thread's device: the job's helper threads
 * adopt the job thread's. ZAP_OK, ZAP_ERR_CUDA (the caller warns), or
 * ZAP_ERR_UNSUPPORTED without CUDA. */
zap_status_t zap_verify_device_select(int dev);

/* len bytes (at least 1) of memory of the current device; NULL when none can
 * be had (the caller then keeps the bytes on the host). Returns: release
 * with zap_verify_device_free. */
void *zap_verify_device_alloc(size_t len);

/* Copies len bytes of host memory src (borrowed) to device memory dst and
 * waits for the copy. 1 on success, 0 on failure. */
int zap_verify_device_copy(void *dst, const void *src, size_t len);

/* Frees memory from zap_verify_device_alloc; NULL is accepted. */
void zap_verify_device_free(void *d);

/* ---- the pinned staging ring --------------------------------------------- */

/* A rank that verifies on the GPU receives each chunk of a segment into a
 * slot of page-locked memory and copies it from there to the segment's
 * device buffer on a stream of its own. Slots of the ring and the bytes of
 * each: a chunk of the segment stream never exceeds one slot. */
#define ZAP_VERIFY_RING_SLOTS 4
#define ZAP_VERIFY_RING_SLOT_BYTES ((size_t)8 << 20)

typedef struct zap_verify_ring zap_verify_ring_t;

/* A ring for device dev: the one a previous job left (or a preparation
 * made), else a new one. NULL without CUDA, for dev < 0, or when the pinned
 * memory, stream or events cannot be had (callers then copy from plain
 * memory, the slow path). Thread-safe. Returns: give it back with
 * zap_verify_ring_release. */
zap_verify_ring_t *zap_verify_ring_acquire(int dev);

/* Keeps r for the next job on its device (up to 4 per device), else frees
 * it. Waits for r's copies first. NULL is accepted. Thread-safe. */
void zap_verify_ring_release(zap_verify_ring_t *r);

/* Slot j % ZAP_VERIFY_RING_SLOTS, once the copy out of it queued by
 * zap_verify_ring_copy(r, j - ZAP_VERIFY_RING_SLOTS, ...) has finished
 * (blocks until then); NULL when that wait failed (logged). */
unsigned char *zap_verify_ring_slot(zap_verify_ring_t *r, size_t j);

/* Queues the copy of len bytes of slot j to device memory dst on the ring's
 * stream; does not wait for it. ZAP_OK or ZAP_ERR_CUDA (logged). */
zap_status_t zap_verify_ring_copy(zap_verify_ring_t *r, size_t j, void *dst, size_t len);

/* Blocks until the copy queued from slot j (and, the stream being in order,
 * every earlier one) has finished. ZAP_OK or ZAP_ERR_CUDA (logged). */
zap_status_t zap_verify_ring_wait(zap_verify_ring_t *r, size_t j);

/* Chunks copied through any ring since the process started (tests show with
 * it that a GPU rank's stream took the ring). */
unsigned long zap_verify_ring_copies(void);
#endif
