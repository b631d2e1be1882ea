// The kernel-socket transport uses the software RNIC's context (soft/context.h).
#pragma once

#include "esock/soft/context.h"

namespace esock::ksock {
using Context = soft::Context;
}  // namespace esock::ksock
