# What both install drivers share: step() runs a command and fails the test when it fails, and
# install_ember() installs BUILD_DIR into a fresh ${WORK}/prefix.

# step(COMMAND...): runs it; a non-zero exit fails the test, naming the command.
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${TEST}: '${ARGN}' failed (${rc})")
  endif()
endfunction()

function(install_ember)
  file(REMOVE_RECURSE ${WORK})
  step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK}/prefix)
endfunction()
set(prefix ${WORK}/prefix)
