/* How the GPU path's kernels cut a call (gpu_kernels.cu; the host-memory
 * stand-in of the tests cuts alike): the grid size of each work, the segment
 * each rank reduces, and the part of a range each block handles. Every rank
 * computes the same cuts from the agreed arguments alone (never from its
 * device), because block b of one rank meets block b of every other at the
 * flags: both must mean the same elements.
 *
 * Boundaries fall on 16-byte multiples (of the element size) so that the
 * kernels can move 16-byte vectors where the buffers allow; only the last
 * part of a range may end elsewhere. Plain C, also compiled as CUDA. */
#ifndef ZAP_CUDA_GPU_SPLIT_H
#define ZAP_CUDA_GPU_SPLIT_H
#include <stddef.h>
#include "cuda_coll.h"

/* Callable from kernels too when compiled as CUDA. */
#ifdef __CUDACC__
#define ZAP_GPU_HD __host__ __device__
#else
#define ZAP_GPU_HD
#endif

#define ZAP_GPU_MAX_BLOCKS 64       /* flags per peer and phase in a channel's region */
#define ZAP_GPU_RSAG_BLOCKS 32      /* the large allreduce's grid, at most */
#define ZAP_GPU_ONESHOT_BLOCKS 16   /* the one-shot forms' grid, at most */
#define ZAP_GPU_BLOCK_MIN_BYTES (32u << 10) /* below this per block, fewer blocks */

/* Elements per 16 bytes (at least 1). */
ZAP_GPU_HD static inline size_t zap_gpu_unit(size_t esize) { return esize >= 16 ? 1 : 16 / esize; }

/* Part i of n of [lo, hi): whole units, spread as evenly as they go, the
 * remainder to the lowest parts; *plo, *phi. */
ZAP_GPU_HD static inline void zap_gpu_part(size_t lo, size_t hi, size_t unit, int n, int i, size_t *plo, size_t *phi)
{
    size_t units = (hi - lo + unit - 1) / unit, per = units / (size_t)n, rem = units % (size_t)n;
    size_t a = per * (size_t)i + ((size_t)i < rem ? (size_t)i : rem);
    size_t b = a + per + ((size_t)i < rem ? 1 : 0);
    a = lo + a * unit;
    b = lo + b * unit;
    *plo = a < hi ? a : hi;
    *phi = b < hi ? b : hi;
}

/* Blocks for a range of bytes: one per ZAP_GPU_BLOCK_MIN_BYTES, 1 .. max. */
ZAP_GPU_HD static inline int zap_gpu_blocks_for(size_t bytes, int max)
{
    size_t n = bytes / ZAP_GPU_BLOCK_MIN_BYTES;
    return n < 1 ? 1 : n > (size_t)max ? max : (int)n;
}

/* The grid of a work on count elements of esize bytes over p ranks: RSAG
 * splits one segment, the others the whole vector. */
ZAP_GPU_HD static inline int zap_gpu_grid(zap_gpu_work_t work, size_t count, size_t esize, int p)
{
    switch (work) {
    case ZAP_GPU_AR_RSAG: return zap_gpu_blocks_for(count * esize / (size_t)p, ZAP_GPU_RSAG_BLOCKS);
    case ZAP_GPU_BC_READ: return zap_gpu_blocks_for(count * esize, ZAP_GPU_RSAG_BLOCKS);
    default: return zap_gpu_blocks_for(count * esize, ZAP_GPU_ONESHOT_BLOCKS);
    }
}
#endif
