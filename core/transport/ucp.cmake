# The UCX transport layer (included by CMakeLists.txt beside it). MPI is only
# its bootstrap (worker address exchange); UCX 1.13 or later.
zap_add_layer(zap_ucp
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/ucp.c ${CMAKE_CURRENT_LIST_DIR}/ucp_worker.c ${CMAKE_CURRENT_LIST_DIR}/ucp_notice.c
          ${CMAKE_CURRENT_LIST_DIR}/ucp_oob.c
  DEPS zap_transport ucx::ucp ucx::ucs MPI::MPI_C)
