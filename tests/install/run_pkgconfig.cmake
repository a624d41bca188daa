# cmake -P driver of install_consumer_pkgconfig: installs BUILD_DIR into a prefix, then builds
# tests/install/consumer/main.cpp as a user without CMake would,
#   c++ main.cpp $(pkg-config --cflags --libs ember) -o app
# with PKG_CONFIG_PATH at the prefix, and runs it.
set(TEST install_consumer_pkgconfig)
include(${CMAKE_CURRENT_LIST_DIR}/common.cmake)
if(NOT PKG_CONFIG)
  message(FATAL_ERROR "${TEST}: pkg-config not found (bash scripts/setup installs it)")
endif()
install_ember()

file(GLOB pc_dirs ${prefix}/lib*/pkgconfig ${prefix}/lib/*/pkgconfig)
list(JOIN pc_dirs ":" pc_dirs)
set(ENV{PKG_CONFIG_PATH} "${pc_dirs}")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs ember OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TEST}: pkg-config --cflags --libs ember failed (${rc}); PKG_CONFIG_PATH=${pc_dirs}")
endif()
message(STATUS "${TEST}: pkg-config --cflags --libs ember: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")

# The include path it gives is <prefix>/include and nothing else.
set(includes ${flags})
list(FILTER includes INCLUDE REGEX "^-I")
list(TRANSFORM includes REPLACE "^-I" "")
file(REAL_PATH ${prefix}/include expected)
foreach(dir IN LISTS includes)
  file(REAL_PATH ${dir} dir)
  if(NOT dir STREQUAL expected)
    message(FATAL_ERROR "${TEST}: pkg-config gives -I${dir}; the only one should be ${expected}")
  endif()
endforeach()

step(${CXX} ${CONSUMER}/main.cpp ${flags} -o ${WORK}/app)
step(${WORK}/app)
