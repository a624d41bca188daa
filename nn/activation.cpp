#include "ember/nn/activation.h"

#include <charconv>
#include <utility>
#include <cmath>

#include "ember/common/error.h"

namespace ember::nn {
namespace {

// A double as Python's repr writes it (PyTorch's extra_repr formats with it): the shortest
// round-trip digits, and ".0" on an integral value ("1.0", "0.01", "1e-05").
std::string python_float(double v) {
  char buffer[64];
  auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, v);
  std::string text(buffer, error == std::errc() ? end : buffer);
  if (std::isfinite(v) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

GELU::GELU(GELUOptions options) : options_(std::move(options)) {
  EMBER_CHECK(options_.approximate == "none" || options_.approximate == "tanh",
              "GELU: approximate must be \"none\" or \"tanh\", got \"", options_.approximate, "\"");
}

std::string GELU::extra_repr() const { return "approximate='" + options_.approximate + "'"; }

LeakyReLU::LeakyReLU(double negative_slope) : negative_slope_(negative_slope) {}

std::string LeakyReLU::extra_repr() const { return "negative_slope=" + python_float(negative_slope_); }

ELU::ELU(double alpha) : alpha_(alpha) {}

std::string ELU::extra_repr() const { return "alpha=" + python_float(alpha_); }

}  // namespace ember::nn
