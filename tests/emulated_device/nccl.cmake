# The emulated NCCL's tests, included by tests/emulated_device/CMakeLists.txt:
#   nccl_transport  the clique transport alone (ember_emulated_nccl_transport), with threads and
#                   fork()ed processes; needs no CUDA runtime, so it can run in every build
add_executable(ember_tests_nccl_transport ${CMAKE_CURRENT_LIST_DIR}/test_nccl_transport.cpp)
target_link_libraries(ember_tests_nccl_transport PRIVATE ember_test_main ember_emulated_nccl_transport)
add_test(NAME nccl_transport COMMAND ember_tests_nccl_transport)
set_tests_properties(nccl_transport PROPERTIES LABELS cuda-emulated TIMEOUT 300)
