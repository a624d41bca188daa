// The one header a user includes: the whole ember API.
#pragma once

#include "common/error.h"     // defines: ember::Error, ember::OutOfMemory
#include "core/autograd.h"    // defines: NoGradGuard, autograd::backward
#include "core/backend.h"     // defines: ember::set_backend, Backend
#include "core/cuda/graph.h"    // defines: ember::cuda::Graph
#include "core/cuda/runtime.h"  // defines: ember::cuda::is_available, device_count, devices
#include "core/device.h"      // defines: ember::Device
#include "core/dtype.h"       // defines: ember::DType
#include "core/generator.h"   // defines: ember::manual_seed
#include "core/ops.h"         // defines: add, matmul, sum, ... and the operators
#include "core/tensor.h"      // defines: ember::Tensor and its factories
#include "core/threading.h"   // defines: ember::set_num_threads
#include "data/dataloader.h"  // defines: ember::data::DataLoader
#include "data/mnist.h"       // defines: ember::data::MNIST
#include "nn/checkpoint.h"    // defines: ember::save, ember::load
#include "nn/functional.h"    // defines: ember::nn::functional::conv2d, ...
#include "nn/layers.h"        // defines: ember::nn::Conv2d, Linear, ...
#include "nn/module.h"        // defines: ember::nn::Module
#include "optim/sgd.h"        // defines: ember::optim::SGD
#include "optim/step_lr.h"    // defines: ember::optim::StepLR
#include "parallel/cpu_communicator.h"  // defines: ember::parallel::CpuCommunicator
#include "parallel/data_parallel.h"     // defines: ember::parallel::DataParallel, DataParallelOptions
#include "parallel/distributed.h"       // defines: ember::parallel::init_distributed, Distributed
