#!/usr/bin/env bash
# Installs what is missing, builds zap with its tests and runs every test
# (single-process suites and multi-rank suites under mpirun over real UCX).
# GPU tests skip with their reason where there is no device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh -DBUILD_TESTING=ON
. scripts/mpirun-env.sh
cd "${ZAP_BUILD_DIR:-build}"
ctest --output-on-failure -j "${ZAP_TEST_JOBS:-2}" --timeout 600 -LE long
