# libzap.so: every layer archive whole, exporting only ZAP_API symbols.
get_property(zap_layers GLOBAL PROPERTY ZAP_LAYERS)
add_library(zap SHARED ${CMAKE_SOURCE_DIR}/core/base/lib_anchor.c)
target_include_directories(zap PUBLIC $<BUILD_INTERFACE:${CMAKE_SOURCE_DIR}/include>
                                      $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
set_target_properties(zap PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
                      C_VISIBILITY_PRESET hidden)
# The layers' objects go in whole; linking the archives too brings their
# external dependencies (MPI, UCX, cudart, libsodium) along.
foreach(layer ${zap_layers})
  target_sources(zap PRIVATE $<TARGET_OBJECTS:${layer}>)
endforeach()
target_link_libraries(zap PRIVATE ${zap_layers})
add_library(zap::zap ALIAS zap)

install(TARGETS zap EXPORT zapTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/zap DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT zapTargets NAMESPACE zap:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zap)
include(CMakePackageConfigHelpers)
file(WRITE ${CMAKE_BINARY_DIR}/zapConfig.cmake.in
  "@PACKAGE_INIT@\ninclude(\"\${CMAKE_CURRENT_LIST_DIR}/zapTargets.cmake\")\n")
configure_package_config_file(${CMAKE_BINARY_DIR}/zapConfig.cmake.in ${CMAKE_BINARY_DIR}/zapConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zap)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/zapConfigVersion.cmake COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/zapConfig.cmake ${CMAKE_BINARY_DIR}/zapConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/zap)
configure_file(${CMAKE_SOURCE_DIR}/cmake/zap.pc.in ${CMAKE_BINARY_DIR}/zap.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/zap.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
