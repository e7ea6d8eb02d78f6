/* Peer maths shared by the algorithms: recursive doubling with the fold for
 * rank counts that are not powers of two, binomial trees rooted anywhere,
 * rings, and the split of a count into nearly equal blocks. Pure functions of
 * (rank, size, ...); every rank computes the same answer for the same inputs. */
#ifndef ZAP_COLL_PATTERNS_H
#define ZAP_COLL_PATTERNS_H
#include <stddef.h>

/* Largest power of two <= p (p >= 1). */
static inline int zap_pat_pof2(int p)
{
    int q = 1;
    while (q * 2 <= p)
        q *= 2;
    return q;
}

/* Recursive doubling over p ranks: the first 2*rem ranks (rem = p - pof2)
 * pair up, even with odd; the even rank folds its data into the odd one and
 * sits out. newrank is the rank among the pof2 active ones, -1 for a folded
 * rank. */
static inline int zap_pat_rd_newrank(int rank, int p)
{
    int rem = p - zap_pat_pof2(p);
    if (rank < 2 * rem)
        return (rank % 2) ? rank / 2 : -1;
    return rank - rem;
}

/* The real rank of an active newrank. */
static inline int zap_pat_rd_realrank(int newrank, int p)
{
    int rem = p - zap_pat_pof2(p);
    return newrank < rem ? newrank * 2 + 1 : newrank + rem;
}

/* Split n elements into nblocks blocks, the first n % nblocks one longer:
 * block i starts at zap_pat_block_disp(n, nblocks, i); block nblocks ends at n. */
static inline size_t zap_pat_block_disp(size_t n, size_t nblocks, size_t i)
{
    size_t q = n / nblocks, r = n % nblocks;
    return i * q + (i < r ? i : r);
}
static inline size_t zap_pat_block_count(size_t n, size_t nblocks, size_t i)
{
    return zap_pat_block_disp(n, nblocks, i + 1) - zap_pat_block_disp(n, nblocks, i);
}

/* Ring neighbours and modular index. */
static inline int zap_pat_mod(long a, int p) { return (int)(((a % p) + p) % p); }

/* Virtual rank relative to root, and back. */
static inline int zap_pat_vrank(int rank, int root, int p) { return zap_pat_mod((long)rank - root, p); }
static inline int zap_pat_realrank(int vrank, int root, int p) { return zap_pat_mod((long)vrank + root, p); }

/* Binomial tree over virtual ranks (root 0): vr's parent is vr minus its
 * lowest set bit; its subtree is [vr, vr + lowbit(vr)) clipped to p (the root's
 * is everything). Children of vr are vr + m for each power of two m below
 * lowbit(vr) (below pof2-ceiling for the root) with vr + m < p. */
static inline int zap_pat_lowbit(int vr) { return vr & -vr; }
static inline int zap_pat_binomial_parent(int vr) { return vr - zap_pat_lowbit(vr); }
/* The largest child mask of vr (children are vr + m for m = top, top/2, ...,
 * 1 with vr + m < p); 0 for a leaf. */
static inline int zap_pat_binomial_top(int vr, int p)
{
    int lim = vr == 0 ? p : zap_pat_lowbit(vr);
    int m = 1;
    while (m * 2 < lim)
        m *= 2;
    return m < lim ? m : 0;
}
/* End (exclusive) of vr's subtree. */
static inline int zap_pat_subtree_end(int vr, int p)
{
    if (vr == 0)
        return p;
    long e = (long)vr + zap_pat_lowbit(vr);
    return e < p ? (int)e : p;
}

/* Recursive halving over pof2 positions: the range [*lo, *hi) newrank r holds
 * before the step of mask (mask pof2: after every step). Each step keeps the
 * lower half where r's bit is clear, the upper half where it is set. */
static inline void zap_pat_halving_range(int pof2, int r, int mask, int *lo, int *hi)
{
    int idx = 0, last = pof2;
    for (int m = 1; m < mask; m <<= 1) {
        int half = (last - idx) / 2;
        if (r & m)
            idx += half;
        else
            last -= half;
    }
    *lo = idx;
    *hi = last;
}

/* The step number of mask (a power of two) counted from base: base + log2(mask). */
static inline int zap_pat_step_of(int base, int mask)
{
    int step = base;
    for (int m = mask; m > 1; m >>= 1)
        step++;
    return step;
}
#endif
