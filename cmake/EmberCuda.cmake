# Decides whether the CUDA backend is built (EMBER_CUDA=AUTO|ON|OFF|EMULATED) and finds what it links.
# Sets EMBER_HAS_CUDA; with it, the CUDA language is enabled for CMAKE_CUDA_ARCHITECTURES (default 90)
# and the targets CUDA::cudart, CUDA::cublas, CUDNN::cudnn and NCCL::nccl exist.
#
# EMULATED builds ember's CUDA code exactly as for a GPU, with the host compiler and no toolkit:
# the kernels from the CUDA emulator, and CUDA::cudart and NCCL::nccl standing for the emulated
# device (kernels/cuda/emulator/device). Sets EMBER_CUDA_EMULATED; cuBLAS and cuDNN are absent.
include(CheckLanguage)
set(EMBER_HAS_CUDA OFF)
set(EMBER_CUDA_EMULATED OFF)
if(EMBER_CUDA STREQUAL "EMULATED")
  set(EMBER_HAS_CUDA ON)
  set(EMBER_CUDA_EMULATED ON)
  set(EMBER_CUDA_EMULATOR ON CACHE BOOL "" FORCE)
  foreach(target CUDA::cudart NCCL::nccl)
    add_library(${target} INTERFACE IMPORTED GLOBAL)
    set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES ember_emulated_device)
  endforeach()
  message(STATUS "ember: CUDA backend EMULATED (ember's emulated GPUs; no cuBLAS, cuDNN)")
  return()
elseif(NOT EMBER_CUDA STREQUAL "OFF")
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
