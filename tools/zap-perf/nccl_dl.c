/* See nccl_dl.h: NCCL's entry points resolved at run time. */
#include "nccl_dl.h"
#include <dlfcn.h>
#include <stdio.h>

ncclResult_t (*ncclGetUniqueId)(ncclUniqueId *);
ncclResult_t (*ncclCommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
ncclResult_t (*ncclAllReduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);
ncclResult_t (*ncclBroadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t);
ncclResult_t (*ncclCommDestroy)(ncclComm_t);
const char *(*ncclGetErrorString)(ncclResult_t);

static int load_state; /* 0 untried, 1 loaded, -1 failed */

int nccl_dl_load(void)
{
    if (load_state != 0)
        return load_state > 0 ? 0 : -1;
    load_state = -1;
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_GLOBAL);
    if (h == NULL) {
        fprintf(stderr, "zap-perf coll: NCCL column off: %s\n", dlerror());
        return -1;
    }
    struct { const char *name; void **slot; } syms[] = {
        {"ncclGetUniqueId", (void **)&ncclGetUniqueId},   {"ncclCommInitRank", (void **)&ncclCommInitRank},
        {"ncclAllReduce", (void **)&ncclAllReduce},       {"ncclBroadcast", (void **)&ncclBroadcast},
        {"ncclCommDestroy", (void **)&ncclCommDestroy},   {"ncclGetErrorString", (void **)&ncclGetErrorString},
    };
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        *syms[i].slot = dlsym(h, syms[i].name);
        if (*syms[i].slot == NULL) {
            fprintf(stderr, "zap-perf coll: NCCL column off: libnccl.so.2 has no %s\n", syms[i].name);
            return -1;
        }
    }
    load_state = 1;
    return 0;
}
