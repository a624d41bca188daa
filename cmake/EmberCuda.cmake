# Decides whether the CUDA backend is built (EMBER_CUDA=AUTO|ON|OFF) and finds what it links.
# Sets EMBER_HAS_CUDA; with it, the CUDA language is enabled for CMAKE_CUDA_ARCHITECTURES (default 90)
# and the targets CUDA::cudart, CUDA::cublas, CUDNN::cudnn and NCCL::nccl exist.
include(CheckLanguage)
set(EMBER_HAS_CUDA OFF)
if(NOT EMBER_CUDA STREQUAL "OFF")
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(EMBER_HAS_CUDA ON)
  elseif(EMBER_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EMBER_CUDA=ON but no CUDA compiler (nvcc) was found; set CMAKE_CUDA_COMPILER "
                        "or configure with -DEMBER_CUDA=OFF")
  endif()
endif()

if(EMBER_HAS_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 flag for nvcc
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  find_package(CUDNN REQUIRED)
  find_package(NCCL REQUIRED)
  message(STATUS "ember: CUDA backend ON (architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  message(STATUS "ember: CUDA backend OFF")
endif()
