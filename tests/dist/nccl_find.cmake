# The `nccl_find` test: cmake/nccl.cmake under KPS_WITH_NCCL=OFF, with only the
# nvidia-nccl-cu13 wheel's layout (a fake venv whose site-packages holds nvidia/nccl, system
# directories hidden), with NCCL_ROOT, and ON with nothing to find (a configure error).
#
#   cmake -DKPS_SOURCE_DIR=. -DWORK=build/tests/nccl_find -P tests/dist/nccl_find.cmake
#
# The interpreters the search asks besides Python_EXECUTABLE are left out: $VIRTUAL_ENV is
# unset and KPS_NCCL_PATH_PYTHON=OFF skips the python3 on PATH (a machine's own venv, such
# as PyTorch's, may carry the wheel).
# The headers are stand-ins carrying only the version lines the search reads.
set(src ${KPS_SOURCE_DIR}/tests/dist/nccl_find)
file(REMOVE_RECURSE ${WORK})
set(site ${WORK}/venv/lib/python3.12/site-packages)
file(MAKE_DIRECTORY ${site}/nvidia/nccl/include ${site}/nvidia/nccl/lib ${WORK}/venv/bin)
set(header "#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n")
file(WRITE ${site}/nvidia/nccl/include/nccl.h "${header}")
file(WRITE ${site}/nvidia/nccl/lib/libnccl.so.2 "")  # found, never opened here
# A stand-in interpreter: answers the sysconfig query with the fake site-packages.
file(WRITE ${WORK}/venv/bin/python "#!/bin/sh\necho ${site}\necho ${site}\n")
file(CHMOD ${WORK}/venv/bin/python PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
# Hide every system place NCCL may be installed, so only the case's own source is seen.
set(hide /usr/include /usr/local/include /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/local/lib64 /usr/lib /usr/lib64
         /usr/local/cuda/include /usr/local/cuda/lib /usr/local/cuda/lib64)
set(prefix_root ${WORK}/prefix)
file(MAKE_DIRECTORY ${prefix_root}/include ${prefix_root}/lib)
file(WRITE ${prefix_root}/include/nccl.h "${header}")
set(old_root ${WORK}/old)
file(MAKE_DIRECTORY ${old_root}/include ${old_root}/lib)
file(WRITE ${old_root}/include/nccl.h "#define NCCL_MAJOR 2\n#define NCCL_MINOR 17\n#define NCCL_PATCH 1\n")
file(WRITE ${old_root}/lib/libnccl.so.2 "")
file(WRITE ${prefix_root}/lib/libnccl.so "")

function(configure name want_rc)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=VIRTUAL_ENV ${CMAKE_COMMAND} -S ${src} -B ${WORK}/${name} -DKPS_SOURCE_DIR=${KPS_SOURCE_DIR}
                          "-DCMAKE_IGNORE_PATH=${hide}" "-DCMAKE_SYSTEM_IGNORE_PATH=${hide}"
                          -DPython_EXECUTABLE=/nonexistent -DKPS_NCCL_PATH_PYTHON=OFF ${ARGN}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(want_rc EQUAL 0 AND NOT rc EQUAL 0)
    message(FATAL_ERROR "case ${name}: configure failed:\n${out}\n${err}")
  elseif(NOT want_rc EQUAL 0 AND rc EQUAL 0)
    message(FATAL_ERROR "case ${name}: configure should have failed:\n${out}")
  endif()
  set(case_out "${out}${err}" PARENT_SCOPE)
  message(STATUS "case ${name}: ok")
endfunction()

configure(off 0 -DKPS_WITH_NCCL=OFF -DEXPECT_FOUND=FALSE)
configure(wheel 0 -DKPS_WITH_NCCL=ON -DPython_EXECUTABLE=${WORK}/venv/bin/python -DEXPECT_FOUND=TRUE
          -DEXPECT_INCLUDE_DIR=${site}/nvidia/nccl/include -DEXPECT_LIBRARY=${site}/nvidia/nccl/lib/libnccl.so.2)
configure(root 0 -DKPS_WITH_NCCL=ON -DNCCL_ROOT=${prefix_root} -DEXPECT_FOUND=TRUE
          -DEXPECT_INCLUDE_DIR=${prefix_root}/include -DEXPECT_LIBRARY=${prefix_root}/lib/libnccl.so)
configure(too_old 0 -DKPS_WITH_NCCL=AUTO -DNCCL_ROOT=${old_root} -DEXPECT_FOUND=FALSE)
if(NOT case_out MATCHES "NCCL 2.17.1, older than 2.18.0")
  message(FATAL_ERROR "case too_old: the message does not name the versions:\n${case_out}")
endif()
configure(auto_none 0 -DKPS_WITH_NCCL=AUTO -DEXPECT_FOUND=FALSE)
configure(on_none 1 -DKPS_WITH_NCCL=ON -DEXPECT_FOUND=FALSE)
if(NOT case_out MATCHES "KPS_WITH_NCCL=ON, but nccl.h not found")
  message(FATAL_ERROR "case on_none: the error does not say what is missing:\n${case_out}")
endif()
