/* The copy for the offset where the C library's rep movsb is slow (copy.h):
 * 128 bytes a step through four 32-byte vectors, which the compiler keeps in
 * registers (one AVX2 load and store each where the CPU has AVX2, two SSE2
 * ones otherwise); the tail through memcpy, below the size where that takes
 * rep movsb. */
#include "base/copy.h"

#if defined(__x86_64__) && defined(__GNUC__) && __has_attribute(target_clones)
#define ZAP_COPY_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define ZAP_COPY_CLONES
#endif

int zap_copy_avoid_short_rep;

/* At load, before any collective can copy: the CPU's vendor is what tells
 * (the slow rep movsb is a trait of AMD's cores), not a timing, which a busy
 * host would blur. */
__attribute__((constructor)) static void copy_choose(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    zap_copy_avoid_short_rep = __builtin_cpu_is("amd");
#endif
}

typedef uint8_t zap_copy_v32 __attribute__((vector_size(32)));

ZAP_COPY_CLONES void zap_copy_vector(void *dst, const void *src, size_t n)
{
    uint8_t *d = dst;
    const uint8_t *s = src;
    size_t i = 0;
    for (; i + 128 <= n; i += 128) {
        zap_copy_v32 a, b, c, e;
        memcpy(&a, s + i, 32);
        memcpy(&b, s + i + 32, 32);
        memcpy(&c, s + i + 64, 32);
        memcpy(&e, s + i + 96, 32);
        memcpy(d + i, &a, 32);
        memcpy(d + i + 32, &b, 32);
        memcpy(d + i + 64, &c, 32);
        memcpy(d + i + 96, &e, 32);
    }
    memcpy(d + i, s + i, n - i);
}
