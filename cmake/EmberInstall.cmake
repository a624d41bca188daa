# Installs the libraries, headers (under include/ember, same paths as in the source tree) and a
# CMake package, so that an outside project can use find_package(ember) + ember::ember.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EMBER_LAYER_TARGETS ember_common ember_kernels_cpu ember_kernels ember_core ember_nn ember_optim ember_data ember_parallel ember)
install(TARGETS ${EMBER_LAYER_TARGETS} EXPORT emberTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
foreach(folder common kernels core nn optim data parallel)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}/ DESTINATION ${EMBER_INSTALL_INCLUDEDIR}/${folder}
          FILES_MATCHING PATTERN "*.h" PATTERN "*.cuh")
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/ember.h DESTINATION ${EMBER_INSTALL_INCLUDEDIR})

set(EMBER_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
install(EXPORT emberTargets NAMESPACE ember:: DESTINATION ${EMBER_CONFIG_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/emberConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/emberConfig.cmake INSTALL_DESTINATION ${EMBER_CONFIG_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/emberConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/emberConfig.cmake ${PROJECT_BINARY_DIR}/emberConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCUDNN.cmake ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake
        DESTINATION ${EMBER_CONFIG_DIR})
