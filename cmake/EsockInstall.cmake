# The install step and the .deb packages (README "Install"). Components, one package each:
#   runtime   -> libesock0       libesock.so.0, esock(7)
#   dpdk      -> esock-dpdk      the dpdk provider plugin, <libdir>/esock/libesock_dpdk.so
#   rdmacm    -> esock-rdmacm    the rdmacm provider plugin, <libdir>/esock/libesock_rdmacm.so
#                                (its own package, so libesock0 does not pull DPDK in)
#   tools     -> esock-tools     esockrun, esock-stat, their man pages
#   dev       -> libesock-dev    header, libesock.so, esock.pc, find_package(esock), man 3
#   wireshark -> esock-wireshark the Wireshark plugin
# `cmake --install BUILD [--prefix P]` installs them all; `cmake --build BUILD --target
# uninstall` removes what it wrote; `cpack --config BUILD/CPackConfig.cmake` builds the .debs.
include(CMakePackageConfigHelpers)

# pkg-config: written at install time for the prefix installed into (write_pc.cmake), with
# an rpath for prefixes the loader does not search, so a program linked with
# `pkg-config --libs esock` starts as it is.
set(_pc ${PROJECT_BINARY_DIR}/install-time/esock.pc)
install(CODE "set(ESOCK_PC_IN \"${PROJECT_SOURCE_DIR}/cmake/install/esock.pc.in\")
  set(ESOCK_PC_OUT \"${_pc}\")
  set(ESOCK_PC_LIBDIR \"${CMAKE_INSTALL_LIBDIR}\")
  set(ESOCK_PC_INCLUDEDIR \"${CMAKE_INSTALL_INCLUDEDIR}\")
  set(ESOCK_PC_VERSION \"${PROJECT_VERSION}\")
  include(\"${PROJECT_SOURCE_DIR}/cmake/install/write_pc.cmake\")" COMPONENT dev)
install(FILES ${_pc} DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)

# find_package(esock): esock::esock (relocatable, as CMake's exported targets are).
set(ESOCK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/esock)
install(EXPORT esockTargets NAMESPACE esock:: DESTINATION ${ESOCK_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/install/esockConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/esockConfig.cmake
                              INSTALL_DESTINATION ${ESOCK_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/esockConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/esockConfig.cmake ${PROJECT_BINARY_DIR}/esockConfigVersion.cmake
        DESTINATION ${ESOCK_CMAKE_DIR} COMPONENT dev)

# Man pages (docs/man): the model and variables with the library, the launcher with the
# tools, the C API with the header.
set(_man ${PROJECT_SOURCE_DIR}/docs/man)
install(FILES ${_man}/esock.7 DESTINATION ${CMAKE_INSTALL_MANDIR}/man7 COMPONENT runtime)
install(FILES ${_man}/esockrun.1 ${_man}/esock-stat.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1
        COMPONENT tools)
file(GLOB _man3 ${_man}/*.3)
install(FILES ${_man3} DESTINATION ${CMAKE_INSTALL_MANDIR}/man3 COMPONENT dev)

configure_file(${PROJECT_SOURCE_DIR}/cmake/install/uninstall.cmake.in
               ${PROJECT_BINARY_DIR}/esock_uninstall.cmake @ONLY)
add_custom_target(uninstall COMMAND ${CMAKE_COMMAND} -P ${PROJECT_BINARY_DIR}/esock_uninstall.cmake
                  COMMENT "Removing what the last install from this tree wrote")

# .deb packages (CPack): installed under /usr; dependencies from dpkg-shlibdeps; ldconfig
# triggers and a shlibs file for libesock0.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME esock)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "esock developers <esock-devel@localhost>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime tools dev)
if(TARGET esock_rdmacm)
  list(APPEND CPACK_COMPONENTS_ALL rdmacm)
endif()
if(TARGET esock_dpdk)
  list(APPEND CPACK_COMPONENTS_ALL dpdk)
endif()
if(TARGET esock_wireshark)
  list(APPEND CPACK_COMPONENTS_ALL wireshark)
endif()
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME libesock${PROJECT_VERSION_MAJOR})
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_DPDK_PACKAGE_NAME esock-dpdk)
set(CPACK_DEBIAN_RDMACM_PACKAGE_NAME esock-rdmacm)
set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME esock-tools)
set(CPACK_DEBIAN_DEV_PACKAGE_NAME libesock-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_WIRESHARK_PACKAGE_NAME esock-wireshark)
set(CPACK_COMPONENT_DPDK_DEPENDS runtime)
set(CPACK_COMPONENT_RDMACM_DEPENDS runtime)
set(CPACK_COMPONENT_TOOLS_DEPENDS runtime)
set(CPACK_COMPONENT_DEV_DEPENDS runtime)
set(CPACK_COMPONENT_RUNTIME_DESCRIPTION
    "iWARP (RDDP) sockets in user space: the library\n libesock.so runs unmodified socket programs; a socket switched to DDPMODE\n speaks RDMAP/DDP/MPA (standard iWARP) with zero-copy placement.")
set(CPACK_COMPONENT_DPDK_DESCRIPTION
    "esock's own TCP/IP stack over a DPDK port (provider plugin)\n Loaded by libesock only for ESOCK_PROVIDER=dpdk.")
set(CPACK_COMPONENT_RDMACM_DESCRIPTION
    "esock sockets on an iWARP RNIC or siw through librdmacm (provider plugin)\n Loaded by libesock only for ESOCK_PROVIDER=rdmacm.")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION
    "esockrun and esock-stat: run a program over esock, and watch it\n esockrun preloads libesock.so and configures it (provider, DDPMODE for every socket);\n esock-stat shows each process's provider, stack and DDPMODE connections.")
set(CPACK_COMPONENT_DEV_DESCRIPTION
    "esock development files\n The header, the esock_* extension API's man pages, pkg-config and CMake package files.")
set(CPACK_COMPONENT_WIRESHARK_DESCRIPTION
    "Wireshark plugin for iWARP (MPA, DDP, RDMAP) and esock's stream protocol")
include(CPack)
