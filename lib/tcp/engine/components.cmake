# The TCP engine's building blocks (no I/O, no clock): RTT estimation (RFC 6298),
# congestion control (RFC 5681 Reno, RFC 9438 CUBIC), the RFC 6675 SACK scoreboard, the
# receiver's out-of-order store and RFC 6528 initial sequence numbers.
esock_library(esock_tcp_engine_parts
  SOURCES
    ${CMAKE_CURRENT_LIST_DIR}/rtt_estimator.cc
    ${CMAKE_CURRENT_LIST_DIR}/congestion.cc
    ${CMAKE_CURRENT_LIST_DIR}/reno.cc
    ${CMAKE_CURRENT_LIST_DIR}/cubic.cc
    ${CMAKE_CURRENT_LIST_DIR}/sack_scoreboard.cc
    ${CMAKE_CURRENT_LIST_DIR}/reassembly.cc
    ${CMAKE_CURRENT_LIST_DIR}/isn.cc
    ${CMAKE_CURRENT_LIST_DIR}/syn_cookie.cc
  DEPS esock_base PkgConfig::SODIUM)
