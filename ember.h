// The one header a user includes: the whole ember API.
#pragma once

#include "ember/common/error.h"     // defines: ember::Error, ember::OutOfMemory
#include "ember/core/autograd.h"    // defines: NoGradGuard, autograd::backward
#include "ember/core/backend.h"     // defines: ember::set_backend, Backend
#include "ember/core/cpu_allocator.h"  // defines: ember::cpu::memory_stats, empty_cache
#include "ember/core/cuda/graph.h"    // defines: ember::cuda::Graph
#include "ember/core/cuda/runtime.h"  // defines: ember::cuda::is_available, device_count, devices
#include "ember/core/device.h"      // defines: ember::Device
#include "ember/core/dtype.h"       // defines: ember::DType
#include "ember/core/generator.h"   // defines: ember::manual_seed
#include "ember/core/ops.h"         // defines: add, matmul, sum, ... and the operators
#include "ember/core/tensor.h"      // defines: ember::Tensor and its factories
#include "ember/core/threading.h"   // defines: ember::set_num_threads
#include "ember/data/dataloader.h"  // defines: ember::data::DataLoader
#include "ember/data/mnist.h"       // defines: ember::data::MNIST
#include "ember/nn/activation.h"    // defines: ember::nn::ReLU, Sigmoid, Tanh, GELU, SiLU, LeakyReLU, ELU, Hardswish
#include "ember/nn/checkpoint.h"    // defines: ember::save, ember::load
#include "ember/nn/container.h"     // defines: ember::nn::Identity, ModuleList, ModuleDict
#include "ember/nn/clip_grad.h"     // defines: ember::nn::utils::clip_grad_norm_, clip_grad_value_
#include "ember/nn/conv.h"          // defines: ember::nn::Conv2d, ConvTranspose2d and their options
#include "ember/nn/dropout.h"       // defines: ember::nn::Dropout, Dropout2d
#include "ember/nn/embedding.h"     // defines: ember::nn::Embedding, EmbeddingOptions
#include "ember/nn/functional.h"    // defines: ember::nn::functional::conv2d, ...
#include "ember/nn/init.h"          // defines: ember::nn::init::kaiming_uniform_, ...
#include "ember/nn/linear.h"        // defines: ember::nn::Linear, LinearOptions, Flatten
#include "ember/nn/loss.h"          // defines: ember::nn::CrossEntropyLoss, NLLLoss
#include "ember/nn/module.h"        // defines: ember::nn::Module
#include "ember/nn/normalization.h" // defines: ember::nn::BatchNorm1d, BatchNorm2d, LayerNorm and their options
#include "ember/nn/pooling.h"       // defines: ember::nn::MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, AdaptiveMaxPool2d
#include "ember/nn/sequential.h"    // defines: ember::nn::Sequential
#include "ember/nn/softmax.h"       // defines: ember::nn::Softmax, LogSoftmax
#include "ember/optim/adagrad.h"     // defines: ember::optim::Adagrad
#include "ember/optim/adam.h"        // defines: ember::optim::Adam, AdamW
#include "ember/optim/lr_scheduler.h" // defines: ember::optim::StepLR, CosineAnnealingLR, OneCycleLR, ...
#include "ember/optim/rmsprop.h"     // defines: ember::optim::RMSprop
#include "ember/optim/sgd.h"         // defines: ember::optim::SGD
#include "ember/optim/training_checkpoint.h" // defines: ember::optim::save_training_checkpoint, load_training_checkpoint
#include "ember/parallel/cpu_communicator.h"  // defines: ember::parallel::CpuCommunicator
#include "ember/parallel/data_parallel.h"     // defines: ember::parallel::DataParallel, DataParallelOptions
#include "ember/parallel/distributed.h"       // defines: ember::parallel::init_distributed, Distributed
