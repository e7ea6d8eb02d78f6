/* A host-memory stand-in for the device side of the GPU path
 * (cuda/coll/cuda_coll.h, "the GPU-resident path's device side"), linked into
 * test_coll_stage only, so the path's protocol runs where there is no GPU:
 * channels are malloc'd regions, "exporting" a buffer names its address, and
 * a launch queues a kernel that the channel's tests advance: each block in
 * turn, as far as it can go without waiting, with the real kernels' flags
 * (release stores into the peers' regions, acquire loads of its own), cuts
 * (gpu_split.h), reduction order and cancel rules. Thread ranks of the
 * in-process transport play the GPUs. Knobs make channels, exports and
 * opens fail on demand. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "coll/reduce/reduce.h"
#include "gpu_p2p_impl.h"
#include "gpu_fake.h"

#define QUEUE 64

typedef struct fake_kernel {
    zap_gpu_kargs_t a;
    int phase[ZAP_GPU_MAX_BLOCKS]; /* 0 prologue, 1 waiting to start, 2 waiting to end, 3 done */
    int verdict[ZAP_GPU_MAX_BLOCKS];
} fake_kernel_t;

struct zap_gpu_chan {
    int me, size;
    unsigned char *region;
    unsigned char *regions[ZAP_GPU_MAX_RANKS];
    bool connected;
    fake_kernel_t queue[QUEUE];
    uint64_t head, tail; /* tickets head+1 .. tail are queued */
    uint64_t status[ZAP_GPU_STATUS_RING];
    uint64_t slot_ticket[ZAP_GPU_STATUS_RING];
    void *stage;
    size_t stage_cap;
    int stage_holders;
};

static atomic_int fail_create, fail_open, refuse_expose, held, launches, stages;
static _Thread_local bool refuse_here;
static atomic_ullong next_id = 1;

void zap_fake_gpu_fail(int create, int open)
{
    atomic_store(&fail_create, create);
    atomic_store(&fail_open, open);
}

void zap_fake_gpu_refuse_expose(int n) { atomic_store(&refuse_expose, n); }
void zap_fake_gpu_refuse_here(bool refuse) { refuse_here = refuse; }
int zap_fake_gpu_held(void) { return atomic_load(&held); }
int zap_fake_gpu_launches(void) { return atomic_load(&launches); }
int zap_fake_gpu_stages(void) { return atomic_load(&stages); }

static bool take(atomic_int *knob)
{
    int v = atomic_load(knob);
    while (v > 0 && !atomic_compare_exchange_weak(knob, &v, v - 1))
        ;
    return v > 0;
}

bool zap_gpu_device_present(void) { return true; }
bool zap_gpu_can_move(zap_mem_kind_t kind)
{
    (void)kind;
    return !refuse_here;
}
uint64_t zap_gpu_host_id(void) { return 42; }

static void describe(const void *ptr, zap_gpu_ref_t *ref)
{
    memset(ref, 0, sizeof(*ref));
    ref->host = 42;
    ref->pid = (int32_t)getpid();
    ref->id = (uint64_t)(uintptr_t)ptr;
    ref->base = (uint64_t)(uintptr_t)ptr;
}

zap_status_t zap_gpu_chan_create(int me, int size, zap_gpu_chan_t **ch_p, zap_gpu_ref_t *ref)
{
    if (take(&fail_create))
        return ZAP_ERR_CUDA;
    zap_gpu_chan_t *ch = calloc(1, sizeof(*ch));
    if (ch == NULL || (ch->region = aligned_alloc(4096, ZAP_GPU_REGION_BYTES)) == NULL)
        abort();
    memset(ch->region, 0, ZAP_GPU_REGION_BYTES);
    ch->me = me;
    ch->size = size;
    ch->regions[me] = ch->region;
    describe(ch->region, ref);
    *ch_p = ch;
    return ZAP_OK;
}

zap_status_t zap_gpu_chan_connect(zap_gpu_chan_t *ch, const zap_gpu_ref_t *refs)
{
    if (take(&fail_open))
        return ZAP_ERR_CUDA;
    for (int q = 0; q < ch->size; q++)
        if (q != ch->me)
            ch->regions[q] = (unsigned char *)(uintptr_t)refs[q].base;
    ch->connected = true;
    return ZAP_OK;
}

void zap_gpu_chan_destroy(zap_gpu_chan_t *ch)
{
    if (ch == NULL)
        return;
    int pending = 0;
    for (size_t i = 0; i < ZAP_GPU_STATUS_RING; i++)
        pending += ch->slot_ticket[i] != 0;
    atomic_fetch_sub(&held, pending + ch->stage_holders);
    free(ch->stage);
    free(ch->region);
    free(ch);
}

zap_status_t zap_gpu_expose(zap_gpu_chan_t *ch, const void *ptr, size_t bytes, zap_gpu_ref_t *ref)
{
    (void)ch;
    (void)bytes;
    if (take(&refuse_expose))
        return ZAP_ERR_UNSUPPORTED;
    describe(ptr, ref);
    return ZAP_OK;
}

zap_status_t zap_gpu_stage_acquire(zap_gpu_chan_t *ch, size_t bytes, void **ptr_p, zap_gpu_ref_t *ref)
{
    if (bytes > ch->stage_cap) {
        if (ch->stage_holders > 0)
            return ZAP_ERR_BUSY;
        free(ch->stage);
        if ((ch->stage = malloc(bytes)) == NULL)
            abort();
        ch->stage_cap = bytes;
    }
    ch->stage_holders++;
    atomic_fetch_add(&held, 1);
    atomic_fetch_add(&stages, 1);
    describe(ch->stage, ref);
    ref->id = atomic_fetch_add(&next_id, 1);
    *ptr_p = ch->stage;
    return ZAP_OK;
}

void zap_gpu_stage_release(zap_gpu_chan_t *ch)
{
    if (ch->stage_holders > 0) {
        ch->stage_holders--;
        atomic_fetch_sub(&held, 1);
    }
}

zap_status_t zap_gpu_open(zap_gpu_chan_t *ch, const zap_gpu_ref_t *ref, void **ptr_p)
{
    (void)ch;
    if (take(&fail_open))
        return ZAP_ERR_CUDA;
    *ptr_p = (unsigned char *)(uintptr_t)ref->base + ref->offset;
    return ZAP_OK;
}

zap_status_t zap_gpu_launch(zap_gpu_chan_t *ch, const zap_gpu_launch_t *l, uint64_t *ticket_p)
{
    uint64_t t = ch->tail + 1;
    size_t slot = (size_t)(t % ZAP_GPU_STATUS_RING);
    if (!ch->connected)
        return ZAP_ERR_INVALID_PARAM;
    if (ch->tail - ch->head >= QUEUE || ch->slot_ticket[slot] != 0)
        return ZAP_ERR_BUSY;
    fake_kernel_t *k = &ch->queue[t % QUEUE];
    memset(k, 0, sizeof(*k));
    zap_gpu_kargs_t *a = &k->a;
    size_t esize = zap_dtype_size(l->dt);
    a->work = (int)l->work;
    a->p = ch->size;
    a->me = ch->me;
    a->root = l->root;
    a->nblocks = zap_gpu_grid(l->work, l->count, esize, ch->size);
    a->dt = (int)l->dt;
    a->op = (int)l->op;
    a->stage_in = l->stage_in;
    a->stage_out = l->stage_out;
    a->ok = l->ok;
    a->count = l->count;
    a->esize = esize;
    a->src = l->src;
    a->dst = l->dst;
    a->stage = l->stage;
    for (int q = 0; q < ch->size; q++) {
        a->in[q] = l->in[q];
        a->out[q] = l->out[q];
        a->flags[q] = (unsigned long long *)ch->regions[q];
        a->bank[q] = ch->regions[q] + ZAP_GPU_REGION_BANKS + (size_t)(t & 1) * ZAP_GPU_BANK_BYTES;
    }
    if (l->work == ZAP_GPU_AR_ONESHOT || l->work == ZAP_GPU_BC_ONESHOT) {
        if (l->count * esize > ZAP_GPU_BANK_BYTES)
            return ZAP_ERR_INVALID_PARAM;
        a->ok = 1;
        for (int q = 0; q < ch->size; q++)
            a->in[q] = q == ch->me ? a->src : a->bank[q];
        a->out[ch->me] = a->dst;
    }
    a->ticket = t;
    ch->tail = t;
    ch->slot_ticket[slot] = t;
    ch->status[slot] = 0;
    atomic_fetch_add(&held, 1);
    atomic_fetch_add(&launches, 1);
    *ticket_p = t;
    return ZAP_OK;
}

static void signal_peers(const zap_gpu_kargs_t *a, int phase, int b, int ok)
{
    unsigned long long v = (a->ticket << 1) | (ok ? 1ull : 0ull);
    for (int q = 0; q < a->p; q++)
        if (q != a->me)
            __atomic_store_n(a->flags[q] + zap_gpu_flag_index(phase, a->me, b), v, __ATOMIC_RELEASE);
}

/* -1: some peer's flag is not there yet; else 0 or ZAP_GPU_DONE_CANCELED. */
static int peers_arrived(const zap_gpu_kargs_t *a, int phase, int b, int ok)
{
    int res = ok ? 0 : ZAP_GPU_DONE_CANCELED;
    for (int q = 0; q < a->p; q++) {
        if (q == a->me)
            continue;
        unsigned long long x =
            __atomic_load_n(a->flags[a->me] + zap_gpu_flag_index(phase, q, b), __ATOMIC_ACQUIRE);
        if ((x >> 1) < a->ticket)
            return -1;
        if ((x >> 1) == a->ticket && !(x & 1))
            res = ZAP_GPU_DONE_CANCELED;
    }
    return res;
}

static void seg_part(const zap_gpu_kargs_t *a, int q, int b, size_t unit, size_t *lo, size_t *hi)
{
    size_t slo, shi;
    zap_gpu_part(0, a->count, unit, a->p, q, &slo, &shi);
    zap_gpu_part(slo, shi, unit, a->nblocks, b, lo, hi);
}

/* ((in[0] op in[1]) op ...) op in[p-1] over [lo, hi), into every out. */
static void reduce_into(const zap_gpu_kargs_t *a, const unsigned char *const *in, int nout, unsigned char *const *out,
                        size_t lo, size_t hi)
{
    if (hi <= lo)
        return;
    size_t es = a->esize, n = hi - lo;
    unsigned char *acc = malloc(n * es);
    if (acc == NULL)
        abort();
    memcpy(acc, in[0] + lo * es, n * es);
    for (int q = 1; q < a->p; q++)
        zap_reduce_cpu((zap_dtype_t)a->dt, (zap_op_t)a->op, acc, acc, in[q] + lo * es, n);
    for (int o = 0; o < nout; o++)
        memcpy(out[o] + lo * es, acc, n * es);
    free(acc);
}

/* Advances block b of k as far as it goes; true once it is done. */
static bool step_block(fake_kernel_t *k, int b)
{
    zap_gpu_kargs_t *a = &k->a;
    size_t unit = a->work == ZAP_GPU_BC_ONESHOT || a->work == ZAP_GPU_BC_READ ? 16 : zap_gpu_unit(a->esize);
    size_t es = a->work == ZAP_GPU_BC_ONESHOT || a->work == ZAP_GPU_BC_READ ? 1 : a->esize;
    size_t lo, hi;
    bool ends = a->work == ZAP_GPU_AR_RSAG || a->work == ZAP_GPU_BC_READ;
    if (a->work == ZAP_GPU_AR_RSAG)
        seg_part(a, a->me, b, unit, &lo, &hi);
    else
        zap_gpu_part(0, a->count, unit, a->nblocks, b, &lo, &hi);
    if (k->phase[b] == 0) {
        if (a->work == ZAP_GPU_AR_ONESHOT)
            memcpy(a->bank[a->me] + lo * es, a->src + lo * es, (hi - lo) * es);
        else if (a->work == ZAP_GPU_BC_ONESHOT && a->me == a->root)
            memcpy(a->bank[a->me] + lo, a->src + lo, hi - lo);
        else if (a->work == ZAP_GPU_BC_READ && a->me == a->root && a->stage_in)
            memcpy(a->stage + lo, a->src + lo, hi - lo);
        else if (a->work == ZAP_GPU_AR_RSAG && a->stage_in)
            for (int q = 0; q < a->p; q++) {
                size_t l2, h2;
                if (q == a->me)
                    continue;
                seg_part(a, q, b, unit, &l2, &h2);
                memcpy(a->stage + l2 * es, a->src + l2 * es, (h2 - l2) * es);
            }
        signal_peers(a, 0, b, a->ok);
        k->phase[b] = 1;
    }
    if (k->phase[b] == 1) {
        int v = peers_arrived(a, 0, b, a->ok);
        if (v < 0)
            return false;
        k->verdict[b] = v;
        if (v == 0) {
            switch (a->work) {
            case ZAP_GPU_AR_ONESHOT: reduce_into(a, a->in, 1, a->out + a->me, lo, hi); break;
            case ZAP_GPU_AR_RSAG: reduce_into(a, a->in, a->p, a->out, lo, hi); break;
            case ZAP_GPU_BC_ONESHOT:
                if (a->me != a->root)
                    memcpy(a->dst + lo, a->bank[a->root] + lo, hi - lo);
                break;
            default:
                if (a->me != a->root)
                    memcpy(a->dst + lo, a->in[a->root] + lo, hi - lo);
                break;
            }
        }
        if (!ends) {
            k->phase[b] = 3;
            return true;
        }
        signal_peers(a, 1, b, 1);
        k->phase[b] = 2;
    }
    if (k->phase[b] == 2) {
        if (peers_arrived(a, 1, b, 1) < 0)
            return false;
        if (k->verdict[b] == 0 && a->work == ZAP_GPU_AR_RSAG && a->stage_out)
            for (int q = 0; q < a->p; q++) {
                size_t l2, h2;
                if (q == a->me)
                    continue;
                seg_part(a, q, b, unit, &l2, &h2);
                memcpy(a->dst + l2 * es, a->stage + l2 * es, (h2 - l2) * es);
            }
        k->phase[b] = 3;
    }
    return k->phase[b] == 3;
}

/* Runs the queue's kernels in order, as a stream does, as far as they go. */
static void advance(zap_gpu_chan_t *ch)
{
    while (ch->head < ch->tail) {
        fake_kernel_t *k = &ch->queue[(ch->head + 1) % QUEUE];
        bool all = true;
        int verdict = 0;
        for (int b = 0; b < k->a.nblocks; b++) {
            all = step_block(k, b) && all;
            if (k->phase[b] == 3 && k->verdict[b] != 0)
                verdict = k->verdict[b];
        }
        if (!all)
            return;
        uint64_t t = ch->head + 1;
        ch->status[t % ZAP_GPU_STATUS_RING] = (t << 8) | (uint64_t)(verdict != 0 ? verdict : ZAP_GPU_DONE_OK);
        ch->head = t;
    }
}

zap_status_t zap_gpu_test(zap_gpu_chan_t *ch, uint64_t ticket)
{
    size_t slot = (size_t)(ticket % ZAP_GPU_STATUS_RING);
    if (ch->slot_ticket[slot] != ticket)
        return ZAP_ERR_INVALID_PARAM;
    advance(ch);
    uint64_t v = ch->status[slot];
    if ((v >> 8) != ticket)
        return ZAP_INPROGRESS;
    ch->slot_ticket[slot] = 0;
    atomic_fetch_sub(&held, 1);
    return (v & 15) == ZAP_GPU_DONE_OK ? ZAP_OK : ZAP_ERR_CANCELED;
}
