/* Single-copy reduce: ranks on one host, host memory. The single-copy
 * allreduce's engine (allreduce/allreduce_cma.c) in its rooted form: rank r
 * reduces block r of the p inputs, read straight from the other processes
 * (process_vm_readv), in rank order; the root's block goes into its recvbuf,
 * every other rank's into scratch of its own, from which the root then reads
 * it. Per rank n bytes read and n/p written, the root n more read: against
 * the large shared-memory form's copy of every input into the area and the
 * root's copy of the result out, with two waits per chunk. The result is the
 * allreduce's, byte for byte (same blocks, same order). */
#include "coll/reduce_coll/reduce_coll.h"
#include "coll/allreduce/allreduce.h"

zap_status_t zap_reduce_cma_init(zap_coll_op_t *op) { return zap_allreduce_cma_start(op, op->args.root); }
