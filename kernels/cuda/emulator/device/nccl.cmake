# ember's emulated NCCL, included by kernels/cuda/emulator/device/CMakeLists.txt:
#   ember_emulated_nccl_transport  the clique transport over POSIX shared memory (nccl_transport.h);
#                                  no CUDA header, so its test links it alone
find_package(Threads REQUIRED)
add_library(ember_emulated_nccl_transport STATIC
  ${CMAKE_CURRENT_LIST_DIR}/nccl_doorbell.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_reduce.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_shared_memory.cpp
  ${CMAKE_CURRENT_LIST_DIR}/nccl_transport.cpp)
target_link_libraries(ember_emulated_nccl_transport PUBLIC ember_common Threads::Threads rt)
