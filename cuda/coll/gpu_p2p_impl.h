/* What gpu_p2p.c (the channel, host side) hands gpu_kernels.cu (the kernels)
 * for one launch, and the layout of a channel's region. Private to cuda/coll;
 * plain C, also compiled as CUDA. */
#ifndef ZAP_CUDA_GPU_P2P_IMPL_H
#define ZAP_CUDA_GPU_P2P_IMPL_H
#include <stddef.h>
#include <stdint.h>
#include "cuda_coll.h"
#include "gpu_split.h"

/* A channel's region (one cudaMalloc, exported once):
 *   flags[2][ZAP_GPU_MAX_RANKS][ZAP_GPU_MAX_BLOCKS]  64-bit words; rank q's
 *       block b writes (ticket << 1 | ok) into [phase][q][b] of every peer's
 *       region (phase 0: started, 1: finished), each rank polls its own;
 *   verdict, done: this rank's kernels' failure word and finished-block count;
 *   banks[2][ZAP_GPU_BANK_BYTES]: the one-shot forms' inputs, bank ticket & 1. */
#define ZAP_GPU_FLAG_WORDS (2 * ZAP_GPU_MAX_RANKS * ZAP_GPU_MAX_BLOCKS)
#define ZAP_GPU_REGION_VERDICT (ZAP_GPU_FLAG_WORDS * 8)
#define ZAP_GPU_REGION_DONE (ZAP_GPU_REGION_VERDICT + 8)
#define ZAP_GPU_REGION_BANKS 65536
#define ZAP_GPU_REGION_BYTES (ZAP_GPU_REGION_BANKS + 2 * (size_t)ZAP_GPU_BANK_BYTES)

ZAP_GPU_HD static inline size_t zap_gpu_flag_index(int phase, int rank, int block)
{
    return ((size_t)phase * ZAP_GPU_MAX_RANKS + (size_t)rank) * ZAP_GPU_MAX_BLOCKS + (size_t)block;
}

/* A launch's outcome in its status word: code | peer << 4 | ticket << 8. */
enum { ZAP_GPU_DONE_OK = 1, ZAP_GPU_DONE_CANCELED = 2, ZAP_GPU_DONE_TIMED_OUT = 3 };
#define ZAP_GPU_STATUS_RING 4096 /* launches a channel may have pending */

typedef struct zap_gpu_kargs {
    int work, p, me, root, nblocks;
    int dt, op;
    int stage_in, stage_out, ok;
    size_t count, esize;
    const unsigned char *src;
    unsigned char *dst, *stage;
    const unsigned char *in[ZAP_GPU_MAX_RANKS];
    unsigned char *out[ZAP_GPU_MAX_RANKS];
    unsigned char *bank[ZAP_GPU_MAX_RANKS];        /* one-shot: every rank's bank of this ticket */
    unsigned long long *flags[ZAP_GPU_MAX_RANKS];  /* every rank's flag area, in this process */
    unsigned long long *verdict;                   /* this rank's region */
    unsigned int *done;                            /* this rank's region */
    unsigned int done_target;                      /* done's value once this launch's last block finished */
    unsigned long long *status;                    /* this launch's word of the pinned ring (device address) */
    unsigned long long ticket, timeout_ns;
} zap_gpu_kargs_t;

/* Launches a's kernel on stream (gpu_kernels.cu); ZAP_ERR_CUDA (logged) on a
 * failed launch. */
zap_status_t zap_gpu_kernel_launch(void *stream, const zap_gpu_kargs_t *a);
#endif
