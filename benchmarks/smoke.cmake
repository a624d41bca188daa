# Runs ember-bench for a few iterations per case and checks that its JSON output parses.
execute_process(COMMAND ${BENCH} --benchmark_min_time=0.001 --benchmark_repetitions=1
                        --benchmark_out=${OUT} --benchmark_out_format=json
                RESULT_VARIABLE rc OUTPUT_QUIET)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ember-bench failed with exit code ${rc}")
endif()
file(READ ${OUT} json)
string(JSON count LENGTH "${json}" benchmarks)
if(count LESS 5)
  message(FATAL_ERROR "ember-bench JSON has only ${count} benchmarks")
endif()
message(STATUS "ember-bench smoke: ${count} benchmarks, JSON parses")
