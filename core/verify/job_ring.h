/* A pinned staging ring for a rank's device copies (job_ring.c): internal to
 * the verify layer. */
#ifndef ZAP_VERIFY_JOB_RING_H
#define ZAP_VERIFY_JOB_RING_H
#include <stddef.h>
#include "zap/status.h"

/* Slots of the ring and the bytes of each: a received chunk (job_stream.c)
 * never exceeds one slot. */
#define ZAP_VRING_SLOTS 4
#define ZAP_VRING_SLOT_BYTES ((size_t)8 << 20)

typedef struct zap_vring zap_vring_t;

/* A ring for CUDA device dev: the one a previous job left (or a prepare
 * made), else a new one. NULL without CUDA, for dev < 0, or when the pinned
 * memory, stream or events cannot be had (callers then copy from plain
 * memory, the slow path). Thread-safe. */
zap_vring_t *zap_vring_acquire(int dev);
/* Keeps r for the next job on its device (up to 4 per device), else frees it.
 * Waits for r's copies first. NULL is accepted. */
void zap_vring_release(zap_vring_t *r);
/* Slot j % ZAP_VRING_SLOTS, once the copy out of it queued by
 * zap_vring_copy(r, j - ZAP_VRING_SLOTS, ...) has finished; NULL when that
 * wait failed (the log says why). */
unsigned char *zap_vring_slot(zap_vring_t *r, size_t j);
/* Queues the copy of len bytes of slot j to device memory dst on the ring's
 * stream. ZAP_OK or ZAP_ERR_CUDA. */
zap_status_t zap_vring_copy(zap_vring_t *r, size_t j, void *dst, size_t len);
/* Blocks until the copy queued from slot j (and, the stream being in order,
 * every earlier one) has finished. ZAP_OK or ZAP_ERR_CUDA. */
zap_status_t zap_vring_wait(zap_vring_t *r, size_t j);
/* Chunks copied through any ring since the process started (tests show with
 * it that a GPU rank's stream took the ring). */
unsigned long zap_vring_copies(void);
#endif
