# Sourced by the scripts that run a build made on the development machine
# on the GPU machine, with $build naming it (run from the repository root):
# sets bt to its absolute path, points the tree it was configured in at
# this one (ctest's files hold absolute paths), and puts BUILD/devlibs
# (runtime libraries the GPU host lacks: libsodium) on LD_LIBRARY_PATH.
. scripts/mpirun-env.sh
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
if [ "$src" != "$PWD" ] && [ ! -e "$src" ]; then mkdir -p "$(dirname "$src")"; ln -s "$PWD" "$src"; fi
bt=$(cd "$build" && pwd)
[ -d "$bt/devlibs" ] && export LD_LIBRARY_PATH="$bt/devlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
