#include "mpa/negotiator.h"

#include <algorithm>
#include <utility>

#include "base/endian.h"

namespace esock::mpa {
namespace {

Rtr single_rtr(const V2Block& b) {
  const int n = int{b.rtr_send} + int{b.rtr_write} + int{b.rtr_read};
  if (n != 1) return Rtr::none;
  return b.rtr_write ? Rtr::write : b.rtr_read ? Rtr::read : Rtr::send;
}

void set_rtr(V2Block& b, Rtr r) {
  b.rtr_send = r == Rtr::send;
  b.rtr_write = r == Rtr::write;
  b.rtr_read = r == Rtr::read;
}

}  // namespace

const char* to_string(Negotiator::State s) {
  switch (s) {
    case Negotiator::State::in_progress:
      return "in_progress";
    case Negotiator::State::established:
      return "established";
    case Negotiator::State::rejected:
      return "rejected";
    case Negotiator::State::failed:
      return "failed";
  }
  return "?";
}

const char* to_string(Rtr r) {
  switch (r) {
    case Rtr::none:
      return "none";
    case Rtr::send:
      return "send";
    case Rtr::write:
      return "write";
    case Rtr::read:
      return "read";
  }
  return "?";
}

Negotiator::Negotiator(Config cfg) : cfg_(std::move(cfg)) {
  const std::size_t block = cfg_.revision == kRevision2 ? kV2BlockLen : 0;
  if (cfg_.revision != kRevision1 && cfg_.revision != kRevision2) {
    fail("configured MPA revision must be 1 or 2");
    return;
  }
  if (cfg_.ird > kV2IrdOrdMask || cfg_.ord > kV2IrdOrdMask) {
    fail("configured IRD/ORD above 0x3fff (RFC 6581: 14-bit fields)");
    return;
  }
  if (cfg_.private_data.size() + block > kMaxPrivateData) {
    fail("configured private data too long (RFC 5044 7.1: PD_Length <= 512)");
    return;
  }
  in_.reserve(kFrameHeaderLen + kMaxPrivateData);
  if (!cfg_.initiator) return;
  // RFC 5044 7.1: the initiator speaks first with an MPA Request.
  FrameRepr req;
  req.request = true;
  req.markers = cfg_.markers == Policy::require;
  req.crc = cfg_.crc == Policy::require;
  req.revision = cfg_.revision;
  if (cfg_.revision == kRevision2) {
    V2Block b;
    b.ird = cfg_.ird;
    b.ord = cfg_.ord;
    // RFC 6581: P requests peer-to-peer mode; the RTR bits list the types we can send.
    b.p2p = cfg_.p2p;
    if (cfg_.p2p) {
      b.rtr_send = cfg_.rtr_send;
      b.rtr_write = cfg_.rtr_write;
      b.rtr_read = cfg_.rtr_read;
    }
    req.v2 = b;
    req.enhanced = true;
  }
  req.private_data = cfg_.private_data;
  send(req);
}

std::vector<std::uint8_t> Negotiator::take_output() {
  return std::exchange(out_, {});
}

void Negotiator::send(const FrameRepr& f) {
  sent_revision_ = f.revision;
  f.emit(out_);
}

void Negotiator::fail(std::string why, std::uint8_t llp_code) {
  state_ = State::failed;
  error_ = std::move(why);
  if (llp_code != 0) term_ = {kTermLayerLlp, kTermTypeMpa, llp_code};
}

std::size_t Negotiator::feed(bytes_view in) {
  if (state_ != State::in_progress) return 0;
  std::size_t used = 0;
  while (used < in.size()) {
    // Take only what the frame needs: the header first, then PD_Length octets.
    std::size_t want = kFrameHeaderLen;
    if (in_.size() >= kFrameHeaderLen) want += load_be16(in_.data() + kOffPdLength);
    if (in_.size() >= want) break;
    const std::size_t k = std::min(want - in_.size(), in.size() - used);
    in_.insert(in_.end(), in.begin() + static_cast<std::ptrdiff_t>(used),
               in.begin() + static_cast<std::ptrdiff_t>(used + k));
    used += k;
    FrameRepr f;
    const FrameError e = parse_frame(in_, f);
    if (e == FrameError::truncated) continue;
    if (e != FrameError::none) {
      fail(to_string(e), cfg_.initiator ? kLlpBadReqRep : 0);
      return used;
    }
    on_frame(f);
    return used;
  }
  return used;
}

void Negotiator::peer_closed() {
  if (state_ == State::in_progress)
    fail(in_.empty() ? "connection closed before the MPA frame arrived"
                     : "truncated MPA Request/Reply frame: connection closed mid-frame");
}

void Negotiator::on_frame(const FrameRepr& f) {
  if (cfg_.initiator)
    on_reply(f);
  else
    on_request(f);
}

void Negotiator::reject(FrameRepr reply, std::string why) {
  // RFC 5044 7.1: a responder that cannot accept sends a Reply with R=1, then closes.
  reply.reject = true;
  reply.private_data = cfg_.private_data;
  send(reply);
  state_ = State::rejected;
  error_ = std::move(why);
}

void Negotiator::on_request(const FrameRepr& req) {
  if (!req.request) return fail("expected an MPA Request, got a Reply");
  Negotiated& r = result_;
  // RFC 6581: a revision 2 responder answers a revision 1 request with revision 1; a
  // revision 1 responder answers revision 1 to anything it can read.
  r.revision = std::min(req.revision, cfg_.revision);
  FrameRepr rep;
  rep.request = false;
  rep.revision = r.revision;
  rep.markers = cfg_.markers == Policy::require;
  // RFC 5044 7.1: C=1 in either frame turns CRCs on for both directions.
  r.crc = req.crc || cfg_.crc == Policy::require;
  rep.crc = r.crc;
  r.markers_rx = rep.markers;
  r.markers_tx = req.markers;
  r.ird = cfg_.ird;
  r.ord = cfg_.ord;
  const bool v2 = r.revision == kRevision2 && req.v2.has_value();
  if (v2) {
    // RFC 6581: our ORD must not exceed the initiator's IRD, and we need no more IRD than
    // the initiator's ORD.
    r.ird = std::min(cfg_.ird, req.v2->ord);
    r.ord = std::min(cfg_.ord, req.v2->ird);
    V2Block b;
    b.ird = r.ird;
    b.ord = r.ord;
    rep.v2 = b;
    rep.enhanced = true;
  }
  if (req.revision == kRevision2 && r.revision == kRevision1 && req.v2) {
    // We speak revision 1 only: the IRD/ORD block is opaque private data to us.
    r.peer_private_data.resize(kV2BlockLen);
    req.v2->emit(r.peer_private_data.data());
  }
  r.peer_private_data.insert(r.peer_private_data.end(), req.private_data.begin(),
                             req.private_data.end());
  if (req.markers && cfg_.markers == Policy::refuse)
    return reject(rep, "peer asked for MPA Markers, which we refuse");
  if (req.crc && cfg_.crc == Policy::refuse)
    return reject(rep, "peer asked for MPA CRC, which we refuse");
  if (v2 && req.v2->p2p) {
    // RFC 6581: the responder picks one RTR type out of those the initiator offered and
    // sets only that bit, echoing P. Zero-length Write first (no receive buffer needed),
    // then Read, then Send.
    Rtr pick = Rtr::none;
    if (req.v2->rtr_write && cfg_.rtr_write)
      pick = Rtr::write;
    else if (req.v2->rtr_read && cfg_.rtr_read)
      pick = Rtr::read;
    else if (req.v2->rtr_send && cfg_.rtr_send)
      pick = Rtr::send;
    if (pick == Rtr::none) {
      term_ = {kTermLayerLlp, kTermTypeMpa, kLlpNoMatchingRtr};
      return reject(rep, "peer-to-peer requested with no RTR type we support");
    }
    rep.v2->p2p = true;
    set_rtr(*rep.v2, pick);
    r.p2p = true;
    r.rtr = pick;
  }
  rep.private_data = cfg_.private_data;
  send(rep);
  state_ = State::established;
}

void Negotiator::on_reply(const FrameRepr& rep) {
  if (rep.request) return fail("expected an MPA Reply, got a Request", kLlpBadReqRep);
  if (rep.revision > sent_revision_)
    return fail("MPA Reply revision higher than our Request's", kLlpBadReqRep);
  Negotiated& r = result_;
  r.revision = rep.revision;
  r.peer_private_data = rep.private_data;
  if (rep.reject) {
    state_ = State::rejected;
    error_ = "connection rejected by the MPA responder";
    return;
  }
  if (rep.markers && cfg_.markers == Policy::refuse)
    return fail("MPA responder asked for Markers, which we refuse");
  const bool our_c = cfg_.crc == Policy::require;
  if (rep.crc && !our_c && cfg_.crc == Policy::refuse)
    return fail("MPA responder asked for CRC, which we refuse");
  r.crc = our_c || rep.crc;
  r.markers_rx = cfg_.markers == Policy::require;
  r.markers_tx = rep.markers;
  r.ird = cfg_.ird;
  r.ord = cfg_.ord;
  if (rep.revision == kRevision2) {
    const V2Block& b = *rep.v2;
    // RFC 6581: the responder's ORD must fit our IRD, else Terminate "insufficient IRD".
    if (b.ord > cfg_.ird) return fail("MPA responder ORD exceeds our IRD", kLlpInsufficientIrd);
    r.ird = b.ord;
    r.ord = std::min(cfg_.ord, b.ird);
    if (cfg_.p2p) {
      const Rtr pick = single_rtr(b);
      const bool offered = (pick == Rtr::send && cfg_.rtr_send) ||
                           (pick == Rtr::write && cfg_.rtr_write) ||
                           (pick == Rtr::read && cfg_.rtr_read);
      if (!b.p2p || !offered)
        return fail("MPA responder chose no RTR type we offered", kLlpNoMatchingRtr);
      r.p2p = true;
      r.rtr = pick;
    }
  }
  state_ = State::established;
}

}  // namespace esock::mpa
