// A software RNIC context: an STag table and its protection domains, shared by the
// endpoints created from it, whatever their transport (kernel socket or lib/tcp). Not
// thread-safe: one context per polling thread, passed explicitly (no global state).
//
// As with verbs (RFC 5040 section 4.1: an STag is usable only by a QP of its PD), a peer
// can Read, Write and Send-with-Invalidate every region with remote rights in its
// connection's PD. Endpoints that share the default PD therefore share their exposed
// regions with each other's peers; give a connection whose peer must not reach the others'
// memory its own PD (alloc_pd, EngineConfig::qp.pd, reg_mr(pd, ...)), as the socket
// providers do (one context, so one PD, per connection).
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
  // Another protection domain in the same table, and a region in it.
  std::uint32_t alloc_pd() { return stags_.alloc_pd(); }
  ddp::stag_t reg_mr(std::uint32_t pd, void* addr, std::size_t len, std::uint32_t access) {
    return stags_.register_mr(pd, addr, len, access);
  }
  int dereg_mr(ddp::stag_t stag) { return stags_.deregister(stag); }

  ddp::StagTable& stags() { return stags_; }
  std::uint32_t pd() const { return pd_; }  // the default PD

 private:
  ddp::StagTable stags_;
  std::uint32_t pd_;
};

}  // namespace esock::rnic
