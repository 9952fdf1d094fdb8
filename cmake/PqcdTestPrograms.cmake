# pqcd_test_program(<out-var> <target>): the path that a test runs to start <target>, a program of
# this build, itself (posix_spawn, execve, system(), a test script): the daemon that
# tests/server/daemon_fixture.cc spawns, pqc and pqc-load in tests/client, the identity helper.
#
# Natively that is $<TARGET_FILE:target>. In a cross build with an emulator (e.g. qemu-aarch64,
# CMAKE_CROSSCOMPILING_EMULATOR in cmake/toolchains/aarch64-linux-gnu.cmake), ctest starts the
# test programs through the emulator, but a program they start themselves would be run by the
# kernel, which cannot run a foreign binary without a binfmt_misc registration (CI machines and
# containers usually have none). There it is a generated script,
# <build>/tests/emulated/<target>, that execs the emulator on the program with the same arguments:
# the process keeps its pid, so signals (SIGTERM drain, SIGKILL) and exit codes are the program's.
function(pqcd_test_program out target)
  if(CMAKE_CROSSCOMPILING AND CMAKE_CROSSCOMPILING_EMULATOR)
    set(emulator "")
    foreach(arg IN LISTS CMAKE_CROSSCOMPILING_EMULATOR)
      string(REPLACE "'" "'\\''" arg "${arg}")
      string(APPEND emulator "'${arg}' ")
    endforeach()
    set(script ${PROJECT_BINARY_DIR}/tests/emulated/${target})
    get_property(done GLOBAL PROPERTY PQCD_TEST_PROGRAM_${target})
    if(NOT done)
      set_property(GLOBAL PROPERTY PQCD_TEST_PROGRAM_${target} TRUE)
      file(GENERATE OUTPUT ${script}
           CONTENT "#!/bin/sh\n# ${target} under the emulator (cmake/PqcdTestPrograms.cmake)\nexec ${emulator}'$<TARGET_FILE:${target}>' \"$@\"\n"
           FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE
                            WORLD_READ WORLD_EXECUTE)
    endif()
    set(${out} ${script} PARENT_SCOPE)
  else()
    set(${out} $<TARGET_FILE:${target}> PARENT_SCOPE)
  endif()
endfunction()
