# Runs ember-bench for one short iteration per case and checks that its JSON output parses and
# that no case failed (a skipped CUDA case counts as failed only when it ran).
execute_process(COMMAND ${BENCH} --benchmark_min_time=0.001 --benchmark_repetitions=1
                        "--benchmark_filter=^(ceiling|sgemm/1024|conv2d/conv[12]|max_pool2d|relu/act1|linear|cross_entropy|sgd/tutorial|train_step/64|train_step_dp|inference)/.*cpu"
                        --benchmark_out=${OUT} --benchmark_out_format=json
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ember-bench failed with exit code ${rc}")
endif()
file(READ ${OUT} json)
string(JSON count LENGTH "${json}" benchmarks)
if(count LESS 20)
  message(FATAL_ERROR "ember-bench JSON has only ${count} benchmarks")
endif()
math(EXPR last "${count} - 1")
foreach(i RANGE ${last})
  string(JSON name GET "${json}" benchmarks ${i} name)
  string(JSON error ERROR_VARIABLE no_error GET "${json}" benchmarks ${i} error_message)
  if(no_error STREQUAL "NOTFOUND")
    message(FATAL_ERROR "ember-bench case ${name} failed: ${error}")
  endif()
endforeach()
message(STATUS "ember-bench smoke: ${count} benchmarks, JSON parses, none failed")
