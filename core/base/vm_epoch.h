/* The address-space epoch: a counter that moves whenever a range of this
 * process is unmapped (munmap, mremap, a shrinking brk, shmdt, a MAP_FIXED
 * mapping over it), while some layer that can see those events watches them
 * (the UCX transport, through UCX's memory hooks: core/transport/ucp_vm.c).
 *
 * Why: asking CUDA what kind of memory a pointer is costs a driver call on
 * every collective call. A pointer the driver called plain host memory stays
 * plain host memory until its range is unmapped (only then can the address
 * come back as device or managed memory), so an answer recorded under epoch E
 * holds while the epoch is still E. Without a watcher the epoch is 0 and
 * nothing may be recorded (docs/collectives.md, "Memory kinds"). */
#ifndef ZAP_BASE_VM_EPOCH_H
#define ZAP_BASE_VM_EPOCH_H
#include <stdbool.h>
#include <stdint.h>
#include "zap/common.h"

ZAP_BEGIN_DECLS

/* The current epoch, or 0 while nobody watches the address space. Never
 * blocks; thread-safe; an atomic load. */
uint64_t zap_vm_epoch(void);

/* A mapping changed: every answer recorded so far is stale. Safe from any
 * thread and from inside a memory hook (no allocation, no lock). */
void zap_vm_epoch_bump(void);

/* A watcher starts (true) or stops (false) delivering events; counted, so
 * the epoch is nonzero while at least one watcher runs. Starting moves the
 * epoch too: answers recorded before a gap in watching are stale. */
void zap_vm_epoch_watch(bool on);

ZAP_END_DECLS
#endif
