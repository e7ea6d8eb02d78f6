/* Everything zap offers, in one include: the pool, the transport contract and
 * its in-process transport, collectives, the verification job, settings, the
 * clock, statuses and the version. Each header below also stands alone.
 *
 * The headers that need MPI (zap/ucp.h: the UCX transport, bootstrapped over
 * an MPI communicator; zap/coll_mpi.h: communicators from MPI ones) come with
 * this one when <mpi.h> was included before it, and can be included by
 * themselves at any time. zap/ucx_plugin.h, the UCX memory-domain plugin's
 * registration, is a separate library (libzap_ucx) and is not included. */
#ifndef ZAP_ZAP_H
#define ZAP_ZAP_H
#include "zap/common.h"
#include "zap/status.h"
#include "zap/version.h"
#include "zap/config.h"
#include "zap/clock.h"
#include "zap/pool.h"
#include "zap/transport.h"
#include "zap/inproc.h"
#include "zap/coll.h"
#include "zap/verify.h"
#if defined(MPI_VERSION)
#include "zap/ucp.h"
#include "zap/coll_mpi.h"
#endif
#endif
