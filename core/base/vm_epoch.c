/* The address-space epoch (vm_epoch.h). */
#include "vm_epoch.h"
#include <stdatomic.h>

static atomic_uint_fast64_t epoch = 1;
static atomic_int watchers;

uint64_t zap_vm_epoch(void)
{
    if (atomic_load_explicit(&watchers, memory_order_acquire) <= 0)
        return 0;
    return (uint64_t)atomic_load_explicit(&epoch, memory_order_acquire);
}

void zap_vm_epoch_bump(void)
{
    atomic_fetch_add_explicit(&epoch, 1, memory_order_acq_rel);
}

void zap_vm_epoch_watch(bool on)
{
    if (on) {
        zap_vm_epoch_bump();
        atomic_fetch_add_explicit(&watchers, 1, memory_order_acq_rel);
    } else {
        atomic_fetch_sub_explicit(&watchers, 1, memory_order_acq_rel);
    }
}
