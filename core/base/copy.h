/* Byte copies of collectives' data (user buffers, shared areas, scratch):
 * memcpy, except where the destination lies 1 to 63 bytes past the source
 * within a 4 KiB page. There the C library's large-copy path (rep movsb) runs
 * at a small fraction of its usual speed on AMD's cores, and that offset is
 * the common case of copying out of a page-aligned shared area into malloc's
 * buffers, which start 16 bytes into a page. copy.c copies those with vector
 * loads and stores instead, on the CPUs where that is faster (Intel's keep
 * memcpy's speed there, above the loop's). docs/collectives.md, "Copies",
 * has the figures; zap-perf copy measures both on the machine at hand. */
#ifndef ZAP_BASE_COPY_H
#define ZAP_BASE_COPY_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* From this size the C library may take its rep movsb path; below it, its
 * own vector loop runs whatever the offset. */
#define ZAP_COPY_LOOP_MIN_BYTES ((size_t)2048)

/* The copy that avoids the slow offset (copy.c); any size, any alignment. */
void zap_copy_vector(void *dst, const void *src, size_t n);

/* Whether this CPU's rep movsb is slow at that offset (copy.c: AMD's; Intel's
 * runs at memcpy's usual speed there, faster than the vector loop). Read
 * once, at load. */
extern int zap_copy_avoid_short_rep;

/* Whether dst - src, within a page, is 1 to 63 bytes. */
static inline int zap_copy_short_distance(const void *dst, const void *src)
{
    uintptr_t d = ((uintptr_t)dst - (uintptr_t)src) & 4095u;
    return d != 0 && d < 64;
}

/* memcpy's contract (the ranges must not overlap; dst and src borrowed);
 * never blocks, never fails. */
static inline void zap_copy(void *dst, const void *src, size_t n)
{
    if (n >= ZAP_COPY_LOOP_MIN_BYTES && zap_copy_avoid_short_rep && zap_copy_short_distance(dst, src))
        zap_copy_vector(dst, src, n);
    else
        memcpy(dst, src, n);
}
#endif
