# Cross build for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu) and the
# arm64 libraries of a multiarch installation (dpkg --add-architecture arm64; the :arm64 builds of
# Abseil, OpenSSL, GoogleTest, gRPC, Protobuf, hwloc, libnuma, spdlog, fmt, prometheus-cpp and
# Google Benchmark: scripts/install-deps.sh installs them). The whole daemon builds this way:
#
#   cmake -S . -B build-aarch64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DPQCD_WITH_POSTGRES=OFF
#   cmake --build build-aarch64 --target pqcd pqc pqc-load
#
# (-DPQCD_BUILD_ENGINE=OFF -DPQCD_BUILD_SERVER=OFF -DPQCD_BUILD_BENCH=OFF: the kernels and their
# tests only, which need only the Abseil, OpenSSL and GoogleTest libraries.) The PostgreSQL key
# store stays off: libpq-dev is not Multi-Arch, so there is no arm64 libpq beside the host's.
#
# Code generation runs on the host: protoc and grpc_cpp_plugin are the host's (amd64) programs
# (CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER), the generated code is compiled for and linked against
# the arm64 Protobuf and gRPC libraries. Test binaries, and the daemon that the server tests spawn,
# run under qemu's user-mode emulator (CMAKE_CROSSCOMPILING_EMULATOR: ctest and add_test use it;
# tests/server/daemon_fixture.cc prepends it to the daemon's command line).
#
# tests/cross/run_aarch64.sh configures, builds pqcd, pqc, pqc-load and the kernel, engine, server
# and client tests, and runs them under qemu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(PQCD_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${PQCD_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PQCD_CROSS_TRIPLE}-g++)

# Multiarch layout: the arm64 libraries and their CMake packages are in /usr/lib/aarch64-linux-gnu
# (searched first because of CMAKE_LIBRARY_ARCHITECTURE), arch-independent headers and packages
# (nlohmann_json, CLI11) in /usr/include and /usr/share. Programs (protoc, grpc_cpp_plugin) are the
# host's.
set(CMAKE_LIBRARY_ARCHITECTURE ${PQCD_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Never pick up the host's x86-64 libraries.
list(APPEND CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu
     /usr/lib/x86_64-linux-gnu/cmake)
# prometheus-cpp-dev:arm64 cannot be installed beside the amd64 one (scripts/install-deps.sh says
# why): install-deps.sh unpacks it here.
set(PQCD_CROSS_EXTRA_PREFIX /opt/pqcd-cross/arm64/usr)
if(EXISTS ${PQCD_CROSS_EXTRA_PREFIX})
  list(APPEND CMAKE_PREFIX_PATH ${PQCD_CROSS_EXTRA_PREFIX})
endif()
# pkg-config (hwloc, libnuma) through pkgconf's per-target personality, which searches only the
# arm64 and arch-independent .pc folders (Debian package pkgconf:arm64, a dependency of
# libgrpc-dev:arm64).
find_program(PKG_CONFIG_EXECUTABLE NAMES ${PQCD_CROSS_TRIPLE}-pkg-config)

# qemu-aarch64 (Debian package qemu-user) runs the programs on the arm64 C library of the
# multiarch installation (libc6:arm64, which every :arm64 library depends on): its loader
# /lib/ld-linux-aarch64.so.1 (-L /: no path prefix) and, through LD_LIBRARY_PATH, the libraries in
# /usr/lib/aarch64-linux-gnu. Not -L /usr/aarch64-linux-gnu: that loader is libc6-arm64-cross's,
# another build of glibc (2.36-8cross1 against libc6:arm64's 2.36-9+deb12uN), and a loader and a
# libc.so.6 of two builds disagree on their shared private data: gRPC's first thread start then
# loops forever in glibc's thread-stack cache.
find_program(PQCD_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(PQCD_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      ${PQCD_QEMU_AARCH64};-L;/;-E;LD_LIBRARY_PATH=/usr/lib/${PQCD_CROSS_TRIPLE}:/lib/${PQCD_CROSS_TRIPLE})
endif()
