#!/usr/bin/env bash
# The main job: installs what is missing, builds zap, and verifies a generated
# batch of Ed25519 signatures across 4 MPI ranks (GPU where one is present,
# libsodium on the CPU otherwise). Arguments after the script go to
# `zap-verify run`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-deps.sh
scripts/build.sh -DBUILD_TESTING=OFF >/dev/null
. scripts/mpirun-env.sh
ranks=${ZAP_RANKS:-4}
args=("$@")
((${#args[@]})) || args=(--gen 200000)
exec mpirun -np "$ranks" ./${ZAP_BUILD_DIR:-build}/tools/zap-verify/zap-verify run "${args[@]}"
