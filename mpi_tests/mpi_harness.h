// The multi-rank GoogleTest harness (mpi_main.cc): what a test under mpirun
// can use besides GoogleTest itself.
//
// Every rank runs every test. After each test the ranks combine their
// verdicts (MPI_Allreduce in a listener), so a failure on any rank fails the
// test on all of them; rank 0 prints the progress lines and the verdict, and a
// failing rank prints its own failure text prefixed with its rank. A zap warn or
// error log line that the test did not announce with MpiExpectLog fails the
// test on the rank that logged it.
#pragma once
#include <mpi.h>
#include <string>

// This rank and the world size (MPI_COMM_WORLD).
int MpiRank();
int MpiSize();

// Announces that a zap log line containing needle is expected in the current
// test (an error-path test); it then does not fail the test (zap still writes
// it to stderr). MpiLogSeen says whether such a line was logged so far.
void MpiExpectLog(const std::string &needle);
bool MpiLogSeen(const std::string &needle);

// Lines this rank logged in the current test, for messages.
std::string MpiLogText();
