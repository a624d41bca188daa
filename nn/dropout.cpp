#include "ember/nn/dropout.h"

#include "ember/common/error.h"

namespace ember::nn {

Dropout::Dropout(double p) : p_(p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "Dropout: probability must be in [0, 1], got ", p);
}

std::string Dropout::extra_repr() const { return ember::detail::str("p=", p_, ", inplace=False"); }

Dropout2d::Dropout2d(double p) : p_(p) {
  EMBER_CHECK(p >= 0.0 && p <= 1.0, "Dropout2d: probability must be in [0, 1], got ", p);
}

std::string Dropout2d::extra_repr() const { return ember::detail::str("p=", p_, ", inplace=False"); }

}  // namespace ember::nn
