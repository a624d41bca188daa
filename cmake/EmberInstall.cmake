# Installs the libraries, the public headers (under include/ember/<layer>/, so that users write
# #include <ember/ember.h> with only <prefix>/include on their include path), a CMake package
# (find_package(ember) + ember::ember) and a pkg-config file (pkg-config --cflags --libs ember).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(EMBER_LAYER_TARGETS ember_common ember_kernels_cpu ember_kernels ember_core ember_nn ember_optim ember_data ember_parallel ember)
install(TARGETS ${EMBER_LAYER_TARGETS} EXPORT emberTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# The public API: ember.h and every header it includes, directly or through another one (the
# closure `g++ -MM` gives for ember.h; the install_consumer test checks that what is installed is
# exactly that closure). Everything else stays in the source tree: kernels/, core/kernel_context.h,
# core/cuda/stream.h and check.h, common/cuda_check.h and philox.h, nn/functional_checks.h and
# default_init.h, data/idx.h, parallel/mpi_communicator.h and mpi_check.h, the emulator. A header that ember.h
# starts to reach must be added here, or the install test fails.
set(EMBER_PUBLIC_HEADERS
  ember.h
  # common: the error type
  common/error.h
  # core: Tensor and its ops, devices, autograd, the CPU block cache, the CUDA runtime queries and graphs
  core/autograd.h core/backend.h core/device.h core/dtype.h core/generator.h core/ops.h
  core/cpu_allocator.h core/storage.h core/tensor.h core/threading.h
  core/cuda/graph.h core/cuda/runtime.h
  # nn: modules, layers, functional ops, checkpoints
  nn/activation.h nn/checkpoint.h nn/clip_grad.h nn/container.h nn/conv.h nn/dropout.h nn/embedding.h nn/expanding_array.h
  nn/functional.h nn/init.h
  nn/linear.h nn/module.h nn/options/conv.h nn/options/pooling.h nn/pooling.h nn/sequential.h
  nn/loss.h nn/options/loss.h nn/softmax.h
  nn/normalization.h nn/options/normalization.h
  # optim
  optim/optimizer.h optim/param_group_optimizer.h optim/sgd.h optim/adam.h optim/rmsprop.h optim/adagrad.h
  optim/lr_scheduler.h optim/training_checkpoint.h
  # data: data sets, loader, sampler, MNIST
  data/dataloader.h data/dataset.h data/distributed_sampler.h data/mnist.h
  # parallel: DataParallel, communicators, multi-process setup
  parallel/communicator.h parallel/cpu_communicator.h parallel/data_parallel.h parallel/distributed.h
  parallel/replicated_optimizer.h)
foreach(header IN LISTS EMBER_PUBLIC_HEADERS)
  get_filename_component(folder ${header} DIRECTORY)
  install(FILES ${PROJECT_SOURCE_DIR}/${header} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ember/${folder})
endforeach()

set(EMBER_CONFIG_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/ember)
install(EXPORT emberTargets NAMESPACE ember:: DESTINATION ${EMBER_CONFIG_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/emberConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/emberConfig.cmake INSTALL_DESTINATION ${EMBER_CONFIG_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/emberConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/emberConfig.cmake ${PROJECT_BINARY_DIR}/emberConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/FindCUDNN.cmake ${PROJECT_SOURCE_DIR}/cmake/FindNCCL.cmake
        DESTINATION ${EMBER_CONFIG_DIR})

# --- pkg-config ----------------------------------------------------------------------------------
# ember.pc lists the ember libraries in link order, then what they link. A static library's
# dependencies go in Libs (the user's link needs them; pkg-config --libs without --static must
# give them); a shared library's in Libs.private. ember_data is static in every build.

# Link flags from libraries as CMake found them: a full path to lib<name>.so or .a becomes
# -l<name>, with -L and an rpath when its folder is not one the linker searches anyway; another
# full path (libcudnn.so.9) is kept as it is; flags are kept; bare names become -l<name>.
function(ember_pc_link_flags out)
  set(flags)
  foreach(lib IN LISTS ARGN)
    if(lib MATCHES "^-")
      list(APPEND flags ${lib})
    elseif(IS_ABSOLUTE ${lib})
      get_filename_component(dir ${lib} DIRECTORY)
      get_filename_component(name ${lib} NAME)
      if(NOT dir IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES AND NOT "-L${dir}" IN_LIST flags)
        list(APPEND flags -L${dir} -Wl,-rpath,${dir})
      endif()
      if(name MATCHES "^lib(.+)\\.(so|a)$")
        list(APPEND flags -l${CMAKE_MATCH_1})
      else()
        list(APPEND flags ${lib})
      endif()
    elseif(lib)
      list(APPEND flags -l${lib})
    endif()
  endforeach()
  list(JOIN flags " " flags)
  set(${out} "${flags}" PARENT_SCOPE)
endfunction()

# What each library target links besides ember's own, in the order a static link needs.
set(EMBER_PC_LIBS "")
set(EMBER_PC_LIBS_PRIVATE "")
set(EMBER_PC_CFLAGS "")
function(ember_pc_deps target)
  ember_pc_link_flags(flags ${ARGN})
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "INTERFACE_LIBRARY")
    set(EMBER_PC_LIBS "${EMBER_PC_LIBS} ${flags}" PARENT_SCOPE)
  else()
    set(EMBER_PC_LIBS_PRIVATE "${EMBER_PC_LIBS_PRIVATE} ${flags}" PARENT_SCOPE)
  endif()
endfunction()
foreach(target ember_parallel ember_data ember_optim ember_nn ember_core ember_kernels ember_kernels_cpu)
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "INTERFACE_LIBRARY")  # an interface library has no file to link
    string(APPEND EMBER_PC_LIBS " -l${target}")
  endif()
endforeach()
if(EMBER_HAS_MPI)  # ember_parallel: MPI::MPI_CXX, public, and EMBER_WITH_MPI
  ember_pc_deps(ember_parallel ${MPI_CXX_LINK_FLAGS} ${MPI_CXX_LIBRARIES})
  string(APPEND EMBER_PC_CFLAGS " -DEMBER_WITH_MPI=1")
endif()
if(EMBER_HAS_CUDA)  # NCCL, cuDNN, cuBLAS, the CUDA runtime; ember_common defines EMBER_WITH_CUDA
  ember_pc_deps(ember_parallel ${NCCL_LIBRARY})
  ember_pc_deps(ember_kernels ${CUDNN_LIBRARY} ${CUDA_cublas_LIBRARY} ${CUDA_cudart_LIBRARY})
  string(APPEND EMBER_PC_CFLAGS " -DEMBER_WITH_CUDA=1")
endif()
ember_pc_deps(ember_data ${ZLIB_LIBRARIES} -pthread)
ember_pc_deps(ember_kernels_cpu ${OpenMP_CXX_FLAGS})
string(STRIP "${EMBER_PC_LIBS}" EMBER_PC_LIBS)
string(STRIP "${EMBER_PC_LIBS_PRIVATE}" EMBER_PC_LIBS_PRIVATE)
string(STRIP "${EMBER_PC_CFLAGS}" EMBER_PC_CFLAGS)

# The prefix is the one the install goes to, `cmake --install --prefix P` included, so ember.pc
# gets it at install time. (A relocatable ${pcfiledir}/../.. prefix would print
# -I<prefix>/lib/pkgconfig/../../include, which pkg-config does not recognise as a system folder
# to leave out: under /usr that is -I/usr/include, which breaks libstdc++'s #include_next.)
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE ${CMAKE_INSTALL_${dir}})
    set(EMBER_PC_${dir} ${CMAKE_INSTALL_${dir}})
  else()
    set(EMBER_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(EMBER_PC_PREFIX "@EMBER_PC_PREFIX@")  # left for the install-time pass
configure_file(${PROJECT_SOURCE_DIR}/cmake/ember.pc.in ${PROJECT_BINARY_DIR}/ember.pc.in @ONLY)
install(CODE "set(EMBER_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(${PROJECT_BINARY_DIR}/ember.pc.in ${PROJECT_BINARY_DIR}/ember.pc @ONLY)")
install(FILES ${PROJECT_BINARY_DIR}/ember.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
