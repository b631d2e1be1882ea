# The connection state machine (RFC 9293 3.10) and what segments without one get.
esock_library(esock_tcp_engine
  SOURCES tcb.cc input.cc ack.cc output.cc timers.cc send_buffer.cc recv_queue.cc no_tcb.cc
          drop_reason.cc
  DEPS esock_tcp_engine_parts esock_tcp_wire)
