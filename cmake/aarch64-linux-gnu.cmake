# Cross-compiling kprof for aarch64 (Grace Hopper / Grace Blackwell hosts) with Debian's
# g++-aarch64-linux-gnu against a sysroot of Debian's arm64 packages unpacked by
# scripts/aarch64-sysroot (Debian 12's -dev libraries cannot be installed for arm64 beside the
# amd64 ones: they are not Multi-Arch: same). The tests run under qemu-aarch64, and so do the
# programs they start (tests/CMakeLists.txt wraps them when CMAKE_CROSSCOMPILING_EMULATOR is set).
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DKPROF_SYSROOT=/path/to/sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(KPROF_SYSROOT "$ENV{KPROF_SYSROOT}" CACHE PATH "Unpacked Debian arm64 packages")
if(NOT KPROF_SYSROOT OR NOT EXISTS "${KPROF_SYSROOT}/usr/include")
  message(FATAL_ERROR "KPROF_SYSROOT (${KPROF_SYSROOT}) is not a sysroot: make one with "
                      "scripts/aarch64-sysroot DIR")
endif()
set(CMAKE_SYSROOT "${KPROF_SYSROOT}")
# The compiler checks' own projects read this file again: they get the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES KPROF_SYSROOT)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Libraries, headers and CMake packages from the sysroot only; programs (protoc) from this host.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${KPROF_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${KPROF_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${KPROF_SYSROOT}/usr/share/pkgconfig")
# qemu finds the sysroot's loader and libraries through QEMU_LD_PREFIX (its -L would be taken for
# cmake's own option where cmake -P runs kprof at build time). Both programs by absolute path: a
# test that runs kprof with PATH emptied (the Python package's binary lookup) runs it through this.
find_program(KPROF_ENV_PROGRAM env REQUIRED)
find_program(KPROF_QEMU_AARCH64 qemu-aarch64 REQUIRED)
set(CMAKE_CROSSCOMPILING_EMULATOR ${KPROF_ENV_PROGRAM} "QEMU_LD_PREFIX=${KPROF_SYSROOT}"
                                  ${KPROF_QEMU_AARCH64})
