// StepLR now lives with the other schedulers; this header stays for code that includes it.
// defines: ember::optim::StepLR (in optim/lr_scheduler.h)
#pragma once

#include "ember/optim/lr_scheduler.h"
