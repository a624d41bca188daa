# cmake -P driver of install_consumer: installs BUILD_DIR into a prefix, checks the installed
# headers, then configures, builds and runs tests/install/consumer (find_package(ember)) against
# it. Every compile here has <prefix>/include and nothing of ember's on its include path.
set(TEST install_consumer)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
install_ember()
set(include ${prefix}/include)

# 1. <prefix>/include holds ember/ and nothing else: no generic names (core/, nn/, ...) land in
#    the user's include root.
file(GLOB top RELATIVE ${include} ${include}/*)
if(NOT top STREQUAL "ember")
  message(FATAL_ERROR "${TEST}: ${include} must hold only ember/, it holds: ${top}")
endif()

# 2. The installed package points only into the prefix: no path of the source or build tree (an
#    include folder there would let a consumer compile against headers that are not installed).
file(GLOB_RECURSE installed_text ${prefix}/*.cmake ${prefix}/*.pc ${prefix}/*.h)
foreach(file IN LISTS installed_text)
  file(READ ${file} text)
  string(REPLACE "${prefix}" "" text "${text}")
  foreach(tree ${SOURCE_DIR} ${BUILD_DIR})
    string(FIND "${text}" "${tree}" at)
    if(at GREATER -1)
      message(FATAL_ERROR "${TEST}: ${file} names the tree ${tree}")
    endif()
  endforeach()
endforeach()

# 3. The installed headers are exactly ember.h and what it includes: one missing fails to compile
#    below, one more is an internal header that should not have been installed.
file(WRITE ${WORK}/umbrella.cpp "#include <ember/ember.h>\n")
execute_process(COMMAND ${CXX} -std=c++20 -MM -I${include} ${WORK}/umbrella.cpp
                OUTPUT_VARIABLE deps RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST}: <ember/ember.h> does not compile with only ${include} on the include path")
endif()
string(REGEX MATCHALL "${include}/[^ \\\n]+" reached "${deps}")
list(TRANSFORM reached REPLACE "^${include}/" "")
file(GLOB_RECURSE headers RELATIVE ${include} ${include}/*)
set(internal ${headers})
list(REMOVE_ITEM internal ${reached})
if(internal)
  message(FATAL_ERROR "${TEST}: installed but not reached from ember/ember.h (internal headers?): ${internal}")
endif()

# 4. Every installed header compiles on its own (includes what it uses). One compiler call, one
#    translation unit per header.
set(alone)
foreach(header IN LISTS headers)
  string(MAKE_C_IDENTIFIER ${header} name)
  file(WRITE ${WORK}/alone/${name}.cpp "#include <${header}>\n")
  list(APPEND alone ${WORK}/alone/${name}.cpp)
endforeach()
list(LENGTH headers count)
message(STATUS "${TEST}: ${count} installed headers, each compiled on its own")
step(${CXX} -std=c++20 -fsyntax-only -I${include} ${alone})

# 5. An outside CMake project: find_package(ember), #include <ember/ember.h>, link, run.
step(${CMAKE_COMMAND} -S ${CONSUMER} -B ${WORK}/build -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_CXX_COMPILER=${CXX})
step(${CMAKE_COMMAND} --build ${WORK}/build -j2)
step(${WORK}/build/app)
