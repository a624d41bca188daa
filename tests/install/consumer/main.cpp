// Builds against the installed headers and libraries; exits 0 when a tiny computation is right.
#include <iostream>

#include <ember/ember.h>

int main() {
  ember::Tensor t = ember::ones({2, 3});
  std::cout << t << "\nsum = " << t.sum().item<float>() << "\n";
  return t.sum().item<float>() == 6.0f ? 0 : 1;
}
