// The kernel-socket transport uses the software RNIC's context (rnic/context.h).
#pragma once

#include "esock/rnic/context.h"

namespace esock::ksock {
using Context = rnic::Context;
}  // namespace esock::ksock
