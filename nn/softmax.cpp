#include "ember/nn/softmax.h"

#include "ember/common/error.h"

namespace ember::nn {

std::string Softmax::extra_repr() const { return ember::detail::str("dim=", dim_); }

std::string LogSoftmax::extra_repr() const { return ember::detail::str("dim=", dim_); }

}  // namespace ember::nn
