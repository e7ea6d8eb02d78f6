/* Internals of the verify layer shared by its files and its tests. */
#ifndef ZAP_VERIFY_IMPL_H
#define ZAP_VERIFY_IMPL_H
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "zap/verify.h"
#include "base/crc32c.h"
#include "base/le.h"

/* Header field offsets (docs/batch-format.md). */
enum {
    ZAP_BH_MAGIC = 0,
    ZAP_BH_VERSION = 4,
    ZAP_BH_SCHEME = 6,
    ZAP_BH_FLAGS = 8,
    ZAP_BH_STRIDE = 12,
    ZAP_BH_N_ITEMS = 16,
    ZAP_BH_FIXED_MSG_LEN = 24,
    ZAP_BH_RESERVED = 28,
    ZAP_BH_BATCH_ID = 32,
    ZAP_BH_RECORDS_OFF = 40,
    ZAP_BH_BLOB_OFF = 48,
    ZAP_BH_BLOB_LEN = 56,
    ZAP_BH_CRC = 60
};

/* Record fields of the Ed25519 layouts. */
#define ZAP_REC_PK 0
#define ZAP_REC_SIG 32
#define ZAP_REC_MSG 96      /* fixed: the 32-byte message */
#define ZAP_REC_MSG_OFF 96  /* variable: u32 offset into the blob */
#define ZAP_REC_MSG_LEN 100 /* variable: u32 length */
#define ZAP_VAR_RECORD_MIN 104u

/* zap_verify_batch on a piece of a shard of shard_items items: auto chooses
 * the GPU or the CPU by the shard's size, so every piece of a shard that
 * arrives in segments gets the verifier the whole shard would. */
zap_status_t zap_verify_piece(const zap_batch_view_t *view, const zap_verify_params_t *params, uint64_t shard_items,
                              uint32_t *bitmap, uint8_t *verdicts, zap_verify_stats_t *stats_p);

/* 1 when zap_verify_piece would run a shard of shard_items items on the GPU
 * (the verifier params or ZAP_VERIFIER ask for it, or auto and the shard
 * reaches ZAP_GPU_MIN_ITEMS, and a device is usable), else 0. */
int zap_verify_gpu_planned(const zap_verify_params_t *params, uint64_t shard_items);

/* Readies the calling thread's GPU for verifier calls of up to items items
 * (zap_ed25519_gpu_prepare) so the job's first call does not pay for it;
 * nothing without a GPU layer. A failure only costs that time later. */
void zap_verify_gpu_prepare(uint64_t items);

/* The calling thread's verifier calls stop early (CPU workers claim no more
 * chunks, no further GPU call starts) and return ZAP_ERR_CANCELED once *flag
 * is nonzero (read atomically; NULL clears it). The job sets its peer
 * watch's flag (watch.h) while it verifies. */
void zap_verify_set_cancel(const int *flag);
/* 1 when the calling thread's cancel flag is set. */
int zap_verify_canceled(void);

/* Peak resident set of this process in KiB (VmHWM), 0 if unknown. */
uint64_t zap_verify_peak_rss_kb(void);
/* The job's test hooks' delays (job.h): sleeps seconds (> 0). */
static inline void zap_verify_hook_sleep(double seconds)
{
    struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&ts, NULL);
}
#endif
