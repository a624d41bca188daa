# The emulated NCCL's tests, included by tests/emulated_device/CMakeLists.txt (test_nccl_api.cpp,
# its API on the emulated GPUs, is part of ember_tests_emulated_device there):
#   nccl_transport  the clique transport alone (ember_emulated_nccl_transport), with threads and
#                   fork()ed processes; needs no CUDA runtime, so it can run in every build
#   nccl_failures   failures that leave an emulated GPU faulted, in a process of their own
add_executable(ember_tests_nccl_transport ${CMAKE_CURRENT_LIST_DIR}/test_nccl_transport.cpp)
target_link_libraries(ember_tests_nccl_transport PRIVATE ember_test_main ember_emulated_nccl_transport)
add_test(NAME nccl_transport COMMAND ember_tests_nccl_transport)
set_tests_properties(nccl_transport PROPERTIES LABELS cuda-emulated TIMEOUT 300)

if(TARGET ember_emulated_device)
  add_executable(ember_tests_nccl_failures ${CMAKE_CURRENT_LIST_DIR}/nccl_failures.cpp)
  target_link_libraries(ember_tests_nccl_failures PRIVATE ember_test_main ember_emulated_device)
  add_test(NAME nccl_failures COMMAND ember_tests_nccl_failures)
  set_tests_properties(nccl_failures PROPERTIES LABELS cuda-emulated TIMEOUT 120)
endif()
