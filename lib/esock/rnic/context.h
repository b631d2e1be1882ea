// A software RNIC context: one protection domain and its memory regions (STags), shared by
// the endpoints created from it, whatever their transport (kernel socket or lib/tcp). Not
// thread-safe: one context per polling thread, passed explicitly (no global state).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ddp/stag.h"

namespace esock::rnic {

class Context {
 public:
  Context() : pd_(stags_.alloc_pd()) {}
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Registers [addr, addr+len) with the given ddp::Access rights; returns its STag or 0.
  // Remote peers address it by virtual address (TO = addr + offset), as siw and rping do.
  ddp::stag_t reg_mr(void* addr, std::size_t len, std::uint32_t access) {
    return stags_.register_mr(pd_, addr, len, access);
  }
  int dereg_mr(ddp::stag_t stag) { return stags_.deregister(stag); }

  ddp::StagTable& stags() { return stags_; }
  std::uint32_t pd() const { return pd_; }

 private:
  ddp::StagTable stags_;
  std::uint32_t pd_;
};

}  // namespace esock::rnic
