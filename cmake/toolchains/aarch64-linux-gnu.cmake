# Cross build for 64-bit Arm Linux with Debian's cross compiler (g++-aarch64-linux-gnu) and the
# arm64 libraries of a multiarch installation (dpkg --add-architecture arm64; libabsl-dev:arm64,
# libssl-dev:arm64, libgtest-dev:arm64: scripts/install-deps.sh installs them). Test binaries run
# under qemu's user-mode emulator (CMAKE_CROSSCOMPILING_EMULATOR: ctest and add_test use it).
#
#   cmake -S . -B build-aarch64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#     -DPQCD_BUILD_ENGINE=OFF -DPQCD_BUILD_SERVER=OFF -DPQCD_BUILD_BENCH=OFF
#
# tests/cross/run_aarch64.sh does this, builds the kernel tests and runs them.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(PQCD_CROSS_TRIPLE aarch64-linux-gnu)
set(CMAKE_C_COMPILER ${PQCD_CROSS_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${PQCD_CROSS_TRIPLE}-g++)

# Multiarch layout: the arm64 libraries and their CMake packages are in /usr/lib/aarch64-linux-gnu
# (searched first because of CMAKE_LIBRARY_ARCHITECTURE), arch-independent headers and packages
# (nlohmann_json) in /usr/include and /usr/share. Programs (protoc and the like) are the host's.
set(CMAKE_LIBRARY_ARCHITECTURE ${PQCD_CROSS_TRIPLE})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Never pick up the host's x86-64 libraries.
list(APPEND CMAKE_IGNORE_PATH /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu
     /usr/lib/x86_64-linux-gnu/cmake)

# qemu-aarch64 (Debian package qemu-user). -L: the target's loader and libc (libc6-arm64-cross);
# the multiarch arm64 libraries (absl, OpenSSL, libstdc++) are found through LD_LIBRARY_PATH.
find_program(PQCD_QEMU_AARCH64 NAMES qemu-aarch64 qemu-aarch64-static)
if(PQCD_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR
      ${PQCD_QEMU_AARCH64};-L;/usr/${PQCD_CROSS_TRIPLE};-E;LD_LIBRARY_PATH=/usr/lib/${PQCD_CROSS_TRIPLE}:/lib/${PQCD_CROSS_TRIPLE})
endif()
