# Sourced by the scripts: lets Open MPI run as root (containers, CI) and
# oversubscribe small machines. Kept out of the library: only launch helpers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
