#include "esock/rdmacm/early_recvs.h"

#include <algorithm>
#include <cstring>

namespace esock::rdmacm {

void EarlyRecvs::start(std::uint32_t count, std::uint32_t size) {
  count_ = count;
  size_ = size;
  buf_.assign(std::size_t{count} * size, 0);
}

bool EarlyRecvs::assign(std::uint64_t wr_id, std::span<const ddp::Sge> sg) {
  if (assigned_ == count_) return false;
  ++assigned_;
  waiting_.push_back(Posted{wr_id, {sg.begin(), sg.end()}});
  match();
  return true;
}

bool EarlyRecvs::complete(ddp::Status st, std::uint32_t byte_len) {
  if (completed_ == count_) return false;
  done_.push_back(Done{st, byte_len});
  ++completed_;
  match();
  return true;
}

void EarlyRecvs::match() {
  while (!waiting_.empty() && !done_.empty()) {
    const Posted& p = waiting_.front();
    const std::uint32_t slot_index = delivered_;
    const Done d = done_.front();
    ddp::Completion c{.wr_id = p.wr_id, .opcode = ddp::Opcode::recv, .status = d.status};
    if (d.status == ddp::Status::success) {
      std::size_t room = 0;
      bool valid = true;
      for (const ddp::Sge& s : p.sg) {
        room += s.length;
        valid = valid && (!valid_ || valid_(s));
      }
      if (!valid) {
        c.status = ddp::Status::local_protection_error;
      } else if (d.byte_len > room) {
        // What the device would have said had the ULP's own buffer been posted.
        c.status = ddp::Status::local_length_error;
      } else {
        const std::uint8_t* from = slot(slot_index);
        std::size_t left = d.byte_len;
        for (const ddp::Sge& s : p.sg) {
          const std::size_t k = std::min<std::size_t>(left, s.length);
          if (k > 0) std::memcpy(s.addr, from, k);
          from += k;
          left -= k;
        }
        c.byte_len = d.byte_len;
      }
    }
    ready_.push_back(c);
    waiting_.pop_front();
    done_.pop_front();
    ++delivered_;
  }
}

std::size_t EarlyRecvs::drain(std::span<ddp::Completion> out) {
  std::size_t n = 0;
  while (n < out.size() && !ready_.empty()) {
    out[n++] = ready_.front();
    ready_.pop_front();
  }
  return n;
}

}  // namespace esock::rdmacm
