/* The UCX transport watches the address space for the collectives' memory
 * kind answers (core/base/vm_epoch.h) through UCX's memory hooks (UCM), the
 * same events UCX's registration cache trusts. */
#ifndef ZAP_TRANSPORT_UCP_VM_H
#define ZAP_TRANSPORT_UCP_VM_H

/* Starts watching (counted per process: the first call installs the UCM
 * handler, later ones only count). Where UCM cannot deliver the events
 * (UCX_MEM_EVENTS=no, hooks that do not fire) nothing is watched and the
 * epoch stays 0, so no answer is ever recorded. Never fails the caller. */
void zap_ucp_vm_watch_start(void);
/* Undoes one zap_ucp_vm_watch_start; the last removes the handler (it must,
 * before this library can be unloaded: Open MPI unloads components). */
void zap_ucp_vm_watch_stop(void);

#endif
