# The UCX transport layer (included by CMakeLists.txt beside it). MPI is only
# its bootstrap (worker address exchange); UCX 1.13 or later.
# UCM (UCX's memory hooks) ships beside libucs but has no target of its own
# in UCX's CMake package.
find_library(ZAP_UCM_LIB ucm REQUIRED)
zap_add_layer(zap_ucp
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ucp.c ${CMAKE_CURRENT_LIST_DIR}/ucp_worker.c ${CMAKE_CURRENT_LIST_DIR}/ucp_notice.c
          ${CMAKE_CURRENT_LIST_DIR}/ucp_oob.c ${CMAKE_CURRENT_LIST_DIR}/ucp_vm.c
          ${CMAKE_CURRENT_LIST_DIR}/ucp_warm.c ${CMAKE_CURRENT_LIST_DIR}/ucp_connect.c
  DEPS zap_transport ucx::ucp ucx::ucs ${ZAP_UCM_LIB} MPI::MPI_C)
