# Cross build for 64-bit ARM (a Raspberry Pi, a Linux VM on a student's Mac) with Debian's
# g++-aarch64-linux-gnu; the tests run under qemu-user (CMAKE_CROSSCOMPILING_EMULATOR).
# The header-only dependencies (xtensor, xtl, nlohmann-json, CLI11, doctest) are the
# host's; OpenBLAS is not (ATTNWALK_OPENBLAS=OFF in the preset): products use the loop.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# xtensor's (header-only) CMake package sits under the build machine's multiarch folder.
list(APPEND CMAKE_PREFIX_PATH /usr/lib/${CMAKE_HOST_SYSTEM_PROCESSOR}-linux-gnu/cmake)
