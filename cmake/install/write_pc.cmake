# Run by the install step (cmake/EsockInstall.cmake), where CMAKE_INSTALL_PREFIX is the
# prefix of this install: writes esock.pc for it. In: ESOCK_PC_IN, ESOCK_PC_OUT,
# ESOCK_PC_LIBDIR, ESOCK_PC_INCLUDEDIR, ESOCK_PC_VERSION.
set(ESOCK_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" ESOCK_PC_PREFIX "${ESOCK_PC_PREFIX}")
set(ESOCK_PC_RPATH "")
if(NOT ESOCK_PC_PREFIX MATCHES "^/usr(/local)?$")
  set(ESOCK_PC_RPATH " -Wl,-rpath,\${libdir}")
endif()
configure_file("${ESOCK_PC_IN}" "${ESOCK_PC_OUT}" @ONLY)
