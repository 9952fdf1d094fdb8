# provider_install (tests/provider/CMakeLists.txt): installs the provider component into a fresh
# prefix, then asks Debian's openssl to load the installed module by its file name from that
# directory (OPENSSL_MODULES; `module = pqcd-provider.so`, no path) and to list its KEMs.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --component provider
                        --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install --component provider failed (${rc}): ${out}${err}")
endif()
set(module ${WORK_DIR}/prefix/${MODULES_DIR}/pqcd-provider.so)
if(NOT EXISTS ${module})
  message(FATAL_ERROR "not installed: ${module}\n${out}")
endif()
file(WRITE ${WORK_DIR}/openssl.cnf "openssl_conf = openssl_init
[openssl_init]
providers = provider_sect
[provider_sect]
default = default_sect
pqcd = pqcd_sect
[default_sect]
activate = 1
[pqcd_sect]
module = pqcd-provider.so
activate = 1
")
# In the ASan build the module is instrumented and openssl is not: the runtimes are preloaded.
set(preload_env)
if(PRELOAD)
  string(REPLACE ":" " " preload_list "${PRELOAD}")  # the runtimes' paths, ':'-separated
  set(preload_env "LD_PRELOAD=${preload_list}" "ASAN_OPTIONS=detect_leaks=0")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -E env OPENSSL_CONF=${WORK_DIR}/openssl.cnf
                        OPENSSL_MODULES=${WORK_DIR}/prefix/${MODULES_DIR} ${preload_env}
                        openssl list -kem-algorithms
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
foreach(kem X25519MLKEM768 SecP256r1MLKEM768 SecP384r1MLKEM1024 ML-KEM-512 ML-KEM-768 ML-KEM-1024)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "${kem} @ pqcd")
    message(FATAL_ERROR "openssl did not list ${kem} from the installed module (${rc}):\n${out}${err}")
  endif()
endforeach()
message(STATUS "installed ${module}; openssl loads it and lists its 6 KEMs")
file(REMOVE_RECURSE ${WORK_DIR})
