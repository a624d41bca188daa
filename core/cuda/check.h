// The CUDA check macros, as core includes them (they live in common/ so kernels/ can use them).
// defines: EMBER_CUDA_CHECK, EMBER_CUDA_LAUNCH_CHECK
#pragma once

#include "ember/common/cuda_check.h"
