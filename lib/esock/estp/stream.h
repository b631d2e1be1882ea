// The ESTP engine (docs/stream-protocol.md): byte-stream (or MSGMODE) semantics over the
// Send/Receive and RDMA Read verbs of one queue pair. No I/O and no waiting: every call
// returns at once; the owner drives progress() after the transport moved octets and
// decides how to block. Single-threaded: one owner (the sockets runtime holds a lock).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "base/lazy_pages.h"
#include "esock/estp/wire.h"
#include "esock/rnic/verbs.h"

namespace esock::estp {

struct Params {
  std::uint32_t recv_buffers = 16;         // R (section 2)
  std::uint32_t recv_buffer_size = 65552;  // B: 64 KiB of payload and the header
  std::size_t rndv_threshold = 262144;     // T; 0 disables rendezvous
  bool msgmode = false;
  // Reads and writes of at least this use sinks (section 6.2); 0 disables them. Lower than
  // T: a sink costs no round trip of its own (the reader waits anyway).
  std::size_t sink_threshold = 65536;
  // Rendezvous sources outstanding at once: 1 for writes that wait for theirs (ZSDP),
  // more for writes that return before the peer pulled (AZ-SDP). A receiver holds 64
  // (section 6.1, step 5).
  std::uint32_t max_rndv_out = 1;
};

Hello hello_of(const Params& p);

// Result of a read: n octets; eom/truncated in MSGMODE; err 0 (n == 0 then means end of
// stream), EAGAIN (nothing to copy now), or the connection's error.
struct ReadOut {
  std::size_t n = 0;
  bool eom = false;
  bool truncated = false;
  int err = 0;
};

struct StreamStats {
  std::uint64_t data_tx = 0, data_rx = 0, credit_tx = 0, srcavail_tx = 0, srcavail_rx = 0;
  std::uint64_t zero_copy_pulls = 0, bounce_pulls = 0;
  std::uint64_t sinks_offered = 0, sinks_written = 0, sink_writes = 0;
  // Octets written: copied into DATA messages, and sent by reference (pulled from our
  // sources, or RDMA-written into the peer's sinks) once each finished.
  std::uint64_t copied_octets_tx = 0, zcopy_octets_tx = 0;
  // Bounds a peer hit (docs/security.md): its Hello asked for more send memory than we
  // give (1 at most), an RDMADONE claimed more than the offer.
  std::uint64_t hello_clamped = 0, rdmadone_clamped = 0;
};

class Stream {
 public:
  Stream(rnic::Verbs& v, Params local, Hello peer);
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Registers and posts the R receive buffers; the initiator then sends its first message,
  // a CREDIT of 0 (section 3). 0 or an errno value.
  int start(bool initiator);
  // The send buffers, for a transport that still sends from them by reference after the
  // stream is gone (a reset connection's frames the device has not taken yet): the caller
  // keeps them alive until then (runtime.cc, Conn::release). The stream sends nothing more.
  std::shared_ptr<void> take_send_buffers() {
    return std::make_shared<LazyPages>(std::move(sbufs_));
  }
  // Polls both completion queues and reacts: new messages, returned credits, finished
  // pulls and rendezvous, control messages due. Call after the transport moved octets.
  void progress();

  // --- sending ---
  // Copies up to data.size() octets into DATA messages as credits and send buffers allow.
  // eom (MSGMODE): the last octet ends the message. Returns octets taken (0 for an empty
  // MSGMODE message sent), or -EAGAIN, -EPIPE (after shutdown_write), -error().
  std::ptrdiff_t write(bytes_view data, bool eom);
  // MSGMODE: whether a message of n octets can be taken whole right now.
  bool can_write_whole(std::size_t n) const;
  // Rendezvous by RDMA Read (section 6.1): registers src and sends SRCAVAIL. Up to
  // Params::max_rndv_out may be outstanding at once (pipelined: the peer pulls them in
  // order, and each ends in order). src must stay valid until rndv_finished() returned its
  // value, or, after cancel_rndv(), until rndv_released(). 0, EAGAIN (no credit now),
  // EBUSY (max_rndv_out are outstanding), EPIPE, ENOMEM (not registered), or the
  // connection's error. *id (if given) names it in rndv_front_id() and rndv_finished().
  int start_rndv(bytes_view src, std::uint32_t* id = nullptr);
  bool rndv_active() const { return !rndvs_.empty(); }
  std::size_t rndv_outstanding() const { return rndvs_.size(); }
  // The oldest outstanding rendezvous: its id, 0 if none.
  std::uint32_t rndv_front_id() const { return rndvs_.empty() ? 0 : rndvs_.front().id; }
  // The peer's RDMADONE for the oldest rendezvous arrived (it may still be read meanwhile).
  bool rndv_pulled() const { return !rndvs_.empty() && rndvs_.front().done; }
  // The peer sent RDMADONE for the oldest rendezvous and nothing reads its buffer any more:
  // returns the octets it pulled (at most the offer) and ends it, else nullopt. RDMADONE
  // deregisters the buffer at once; the rendezvous ends only when the verbs no longer read
  // it (Verbs::reads_from): a peer that sends RDMADONE before its Read was answered
  // (hostile) gets a Terminate, and octets TCP may still retransmit are released first.
  std::optional<std::size_t> rndv_finished();
  // Abandons every outstanding rendezvous (close, an error, an interrupted call): the
  // buffers are deregistered at once, so no new Read is answered from them; they may still
  // be read until rndv_released().
  void cancel_rndv();
  // No rendezvous buffer is being read by the connection: the writers may return.
  bool rndv_released() const;
  // Copy-on-write (AZ-SDP, docs/sockets.md "Zero-copy modes"): the outstanding rendezvous
  // `id` is answered from `copy` from now on, which holds its source's octets and stays
  // valid as its source would (until rndv_finished() or rndv_released()). 0; ENOENT when it
  // is not outstanding or the peer said RDMADONE (nothing new is read from it: the source
  // is the application's once rndv_reads_old() is false); EOPNOTSUPP when the verbs
  // cannot (an RNIC reads the memory itself).
  int move_rndv(std::uint32_t id, const std::uint8_t* copy);
  // Whether the connection may still read the source rendezvous `id` had before
  // move_rndv() (octets sent from it by reference, not yet released). True for one not
  // moved, and for one no longer outstanding (a cancelled one's source is read until
  // rndv_released()).
  bool rndv_reads_old(std::uint32_t id) const;
  // --- rendezvous by RDMA Write (section 6.2) ---
  // Receiver: a blocking reader of len >= T octets may offer its buffer as a sink while
  // nothing is queued, the peer takes sinks (Hello) and no sink is out.
  bool sink_possible(std::size_t len) const;
  // Registers dst for remote write and sends SINKAVAIL. dst must stay valid until
  // sink_result() returns a value. 0, EAGAIN (no credit now), or an errno value.
  int offer_sink(mut_bytes dst);
  // The sink resolved: n octets the peer wrote into it (WRITEDONE; they are consumed),
  // or err EAGAIN: it went void (the peer sent other stream data first: read the queue as
  // usual; or it answered a cancel with nothing), or the connection's error. nullopt while
  // it is still out.
  std::optional<ReadOut> sink_result();
  bool sink_out() const { return sink_.state != Sink::State::none; }
  // Still waiting for the peer (not yet resolved).
  bool sink_pending() const {
    return sink_.state == Sink::State::out || sink_.state == Sink::State::cancelling;
  }
  // The buffer goes away now (close, a fork child's copy): deregistered at once, so a Write
  // still coming draws a Terminate instead of landing in memory the application reuses.
  void drop_sink();
  // The reader stops waiting (a signal): sends SINKCANCEL. The sink stays registered until
  // it resolves, which the peer's answer makes happen within a round trip.
  void cancel_sink();
  // Writer: the peer's sink is valid for the next octets of the stream.
  bool sink_writable() const;
  // RDMA-Writes min(src.size(), capacity) octets of src into the peer's sink and sends
  // WRITEDONE: returns the octets taken, or -EAGAIN (no credit now) or -errno. src must stay
  // valid until sink_write_finished() returns a value or, after cancel_sink_write(), until
  // sink_write_released().
  std::ptrdiff_t write_sink(bytes_view src);
  bool sink_write_active() const { return swrite_.active; }
  // The Write and its WRITEDONE have been handed to the transport (the send completed).
  bool sink_write_sent() const { return swrite_.active && swrite_.completed; }
  // The Write completed and the transport holds none of src by reference: its octets.
  std::optional<std::size_t> sink_write_finished();
  void cancel_sink_write();
  bool sink_write_released() const;

  // Queues FIN after everything already written (section 8).
  void shutdown_write();
  bool write_shut() const { return fin_wanted_; }
  // Our FIN was queued after the peer's had arrived: the peer closed first (its end of
  // stream came first), as TCP's passive closer sees it.
  bool closed_after_peer() const { return fin_after_peer_; }

  // --- receiving ---
  // Copies queued DATA (and pulled bounce data) into dst; stops before an unpulled
  // SRCAVAIL. peek: copy without consuming. MSGMODE: at most one message.
  ReadOut read(std::span<const mut_bytes> dst, bool peek);
  // The head of the queue is an SRCAVAIL nobody pulls yet: a reader must pull.
  bool pull_needed() const;
  // Octets of the SRCAVAIL at the head of the queue not pulled yet, if pull_needed().
  std::size_t pull_available() const;
  // Zero-copy pull into dst (registered for the duration, must stay valid until
  // pull_result() or cancel_pull()), or into an engine buffer whose octets then read like
  // DATA. 0 or an errno value.
  int pull(mut_bytes dst);
  // The engine buffer is bounded whatever length the peer advertised (a hostile SRCAVAIL
  // may say 4 GiB): stream mode fetches at most 4 MiB at a time; MSGMODE fetches the whole
  // message up to the larger of 4 MiB and reader_len (the buffer of a reader that cannot
  // wait for a zero-copy pull), and a longer message reads as truncated (MSG_TRUNC), as
  // it would into that reader's buffer.
  int pull_bounce(std::size_t reader_len = 0);
  // An SRCAVAIL anywhere in the queue could be fetched ahead into the engine's buffer
  // (bounded, as a TCP receive buffer is): what pull_bounce() does when no reader waits.
  // MSGMODE messages longer than 4 MiB are left for a reader.
  bool prefetch_needed() const;
  bool pulling() const { return pull_.active; }
  // FIONREAD (ioctl(2), tcp(7)): octets a read could return, advertised sources included (a
  // read pulls them) but not what a zero-copy pull under way takes (its reader has them,
  // or will); MSGMODE: the length of the next whole message, 0 if none yet.
  std::size_t readable_octets() const;
  // SIOCOUTQ (tcp(7)): octets written that the peer has not taken yet: DATA payload whose
  // send has not completed, and what a rendezvous source still has to be pulled.
  std::size_t unsent_octets() const;
  // A finished zero-copy pull: what landed in dst (already consumed from the stream).
  std::optional<ReadOut> pull_result();
  void cancel_pull();

  // --- state ---
  bool readable() const;  // read() would return data, EOF or an error
  bool writable() const;  // write() would take at least one octet (or fail at once)
  bool peer_fin() const { return peer_fin_; }
  int error() const { return error_; }
  // The transport failed (reset, MPA/DDP error): pending and later calls fail with err.
  void fail(int err);
  // The peer's TCP FIN arrived: its socket is closed (a half-close, shutdown(SHUT_WR), is
  // an ESTP FIN only and keeps TCP open, section 8), so nothing written now can ever be
  // read. As on TCP, where the closed peer answers with a reset, writes fail with EPIPE
  // (a rendezvous in flight too); reads still return what arrived, then end of stream.
  void peer_closed() { peer_closed_ = true; }
  bool peer_gone() const { return peer_closed_; }
  // Nothing left to hand to the verbs (FIN included when wanted) and no source left for the
  // peer to pull (an asynchronous write's): close may proceed.
  bool tx_idle() const;
  // Our FIN and every message before it reached the peer (or the stream failed): its
  // grants cover them all. A receiver grants each buffer back at once after the FIN
  // (section 6), so this holds once the peer's application read what we sent. A transport
  // whose close ends both directions waits for it (section 8).
  bool fin_delivered() const { return error_ != 0 || (fin_sent_ && grants_rx_ >= fin_seq_); }
  std::uint32_t send_credits() const { return credits_; }
  const StreamStats& stats() const { return stats_; }

 private:
  struct Entry {  // one unit of received stream data, in order
    enum class Kind : std::uint8_t { data, bounce, src } kind = Kind::data;
    std::uint32_t buf = 0;  // data: receive buffer index
    const std::uint8_t* p = nullptr;
    std::size_t len = 0, off = 0;  // data/bounce: octets and consumed; src: length, pulled
    bool eom = false;
    bool truncated = false;             // bounce (MSGMODE): the message was longer
    std::vector<std::uint8_t> owned{};  // bounce
    ddp::stag_t stag = 0;               // src
    std::uint64_t to = 0;
    std::uint32_t id = 0;
  };
  struct Pull {
    bool active = false, bounce = false, done = false;
    ddp::stag_t stag = 0;
    std::size_t len = 0;
    std::vector<std::uint8_t> buf{};
    bool truncated = false;  // bounce (MSGMODE): len is less than the message
    ReadOut result{};
  };
  struct Rndv {
    bool done = false;
    bool deregistered = false;  // RDMADONE seen: no new Read is answered from it
    ddp::stag_t stag = 0;
    std::uint32_t id = 0;
    std::size_t len = 0, pulled = 0;
    bool moved = false;      // move_rndv: answered from a copy
    std::uint64_t held = 0;  // ... and what of the source the verbs may still read
  };

  struct Sink {  // ours, offered to the peer (section 6.2)
    enum class State : std::uint8_t { none, out, cancelling, written, voided } state = State::none;
    ddp::stag_t stag = 0;
    std::uint32_t id = 0;
    std::size_t cap = 0, written = 0;
    bool cancel_due = false;
  };
  struct PeerSink {  // the peer's, valid until we send other stream data
    bool valid = false;
    ddp::stag_t stag = 0;
    std::uint64_t to = 0;
    std::uint32_t id = 0;
    std::size_t cap = 0;
  };
  struct SinkWrite {
    bool active = false, completed = false, deregistered = false;
    ddp::stag_t stag = 0;
    std::size_t len = 0;
  };

  // An application buffer the transport reads from (a rendezvous source, a sink write's
  // source) goes back to the application in two steps: deregistered, so nothing new is
  // sent from it, then no octet of it still held by reference (Verbs::reads_from).
  // Deregisters once (*deregistered remembers); true once the memory may go back.
  bool give_back(ddp::stag_t stag, bool* deregistered);
  // Gives up a lent buffer at once: deregistered now, *cancelled remembers it for
  // lent_released() until nothing reads it.
  void give_up(ddp::stag_t stag, bool deregistered, ddp::stag_t* cancelled);
  bool lent_released(bool active, ddp::stag_t cancelled) const {
    return !active && (cancelled == 0 || !v_.reads_from(cancelled));
  }

  bool can_send(Type t) const;
  void on_sink_message(const Message& m);
  void sink_resolve(Sink::State to, std::size_t written);
  void send_sink_due();
  // Sends one message (payload for DATA); false when credit or a send buffer is missing.
  bool send(Message m, bytes_view payload);
  void repost(std::uint32_t buf, bool quiet);
  void on_recv(const ddp::Completion& c);
  void on_send(const ddp::Completion& c);
  void on_message(std::uint32_t buf, const Message& m);
  void pull_finished(bool ok);
  std::size_t first_src() const;  // index of the first SRCAVAIL entry, or rq_.size()
  void src_consumed(std::size_t pulled);
  void send_due();
  std::int64_t peer_credits_estimate() const;

  rnic::Verbs& v_;
  Params local_;
  Hello peer_;
  int error_ = 0;

  // receive side
  LazyPages rbufs_;  // R buffers of B octets, committed as messages land in them
  ddp::stag_t rstag_ = 0;
  std::deque<Entry> rq_;
  bool peer_fin_ = false;
  std::uint32_t pending_loud_ = 0, pending_quiet_ = 0;  // grants not yet sent (section 6)
  std::uint64_t granted_total_ = 0, received_total_ = 0;
  std::deque<std::pair<std::uint32_t, std::uint32_t>> dones_due_;  // RDMADONE {id, len}
  Pull pull_;
  bool discarding_ = false;  // MSGMODE: dropping the rest of a truncated message

  // send side
  std::uint32_t credits_ = 0;
  std::size_t sbuf_size_ = 0;
  LazyPages sbufs_;  // committed as messages are written into them
  ddp::stag_t sstag_ = 0;
  std::vector<std::uint32_t> sfree_;
  std::vector<std::uint32_t> sbuf_payload_;  // per send buffer: DATA octets in flight
  bool fin_wanted_ = false, fin_sent_ = false;
  bool fin_after_peer_ = false;  // (closed_after_peer)
  bool peer_closed_ = false;
  // Messages posted, and the peer's grants received, since the start; fin_seq_: the count
  // with our FIN (fin_delivered()).
  std::uint64_t sent_total_ = 0, grants_rx_ = 0, fin_seq_ = 0;
  std::deque<Rndv> rndvs_;                    // outstanding, oldest first
  std::vector<ddp::stag_t> cancelled_stags_;  // cancelled ones the verbs may still read
  std::uint32_t next_rndv_id_ = 1;
  // Section 6.2: stream-data messages (DATA, SRCAVAIL, FIN, WRITEDONE) sent and received;
  // a sink's id is the count its offerer had received, so a stale one is recognised.
  std::uint32_t bearing_tx_ = 0, bearing_rx_ = 0;
  Sink sink_;
  PeerSink peer_sink_;
  SinkWrite swrite_;
  ddp::stag_t cancelled_write_stag_ = 0;
  std::deque<std::uint32_t> cancel_answers_due_;  // WRITEDONE {0, id}
  StreamStats stats_;
};

}  // namespace esock::estp
