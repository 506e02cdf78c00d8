# NCCL, an optional dependency (dist/: the communicator and the collective ops).
#
# KPS never links libnccl: dist/nccl_lib.cc opens it at run time with dlopen, so one build
# runs on machines with and without NCCL. Configure time only finds nccl.h (for the types
# and signatures) and the library's full path (the first one dlopen tries).
#
# Inputs: KPS_WITH_NCCL (AUTO, ON, OFF); hints NCCL_ROOT / NCCL_HOME (CMake or environment
# variables, a prefix holding include/nccl.h and lib/libnccl.so*). Searched after the hints:
# the CUDA toolkit's directories, the system's, then the `nvidia-nccl-cu13` wheel's layout
# (site-packages/nvidia/nccl/{include,lib}, only libnccl.so.2) in the site-packages of
# Python_EXECUTABLE, the project's .venv, $VIRTUAL_ENV and the python3 on PATH.
#
# Outputs: KPS_NCCL_FOUND, KPS_NCCL_INCLUDE_DIR, KPS_NCCL_LIBRARY, KPS_NCCL_VERSION, and
# kps_use_nccl(<sources...>), which gives only those sources the include dir and the
# definitions KPS_HAVE_NCCL=1 and KPS_NCCL_LIBRARY_PATH="<full path>" (the kps target gets
# nothing public, so enabling NCCL rebuilds two files, not the library).
set(KPS_WITH_NCCL AUTO CACHE STRING "Build the NCCL parts: AUTO, ON or OFF")
set_property(CACHE KPS_WITH_NCCL PROPERTY STRINGS AUTO ON OFF)
# The oldest NCCL the code uses: ncclCommSplit and nonblocking ncclCommInitRankConfig are
# 2.18's. dist/nccl_lib.cc checks the loaded library against the same number.
set(KPS_NCCL_MIN_VERSION 2.18.0)

set(KPS_NCCL_FOUND FALSE)
if(NOT KPS_WITH_NCCL MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "KPS_WITH_NCCL is '${KPS_WITH_NCCL}'; it must be AUTO, ON or OFF")
endif()

if(NOT KPS_WITH_NCCL STREQUAL "OFF")
  set(_kps_nccl_hints)
  foreach(_v NCCL_ROOT NCCL_HOME)
    if(${_v})
      list(APPEND _kps_nccl_hints ${${_v}})
    endif()
    if(DEFINED ENV{${_v}})
      list(APPEND _kps_nccl_hints $ENV{${_v}})
    endif()
  endforeach()

  # The wheel's directories: site-packages/nvidia/nccl of each interpreter we can name.
  set(_kps_nccl_pythons)
  foreach(_py "${Python_EXECUTABLE}" "${PROJECT_SOURCE_DIR}/.venv/bin/python" "$ENV{VIRTUAL_ENV}/bin/python")
    if(_py AND EXISTS "${_py}")
      list(APPEND _kps_nccl_pythons "${_py}")
    endif()
  endforeach()
  # KPS_NCCL_PATH_PYTHON=OFF: not the python3 on PATH (the nccl_find test's isolation).
  if(NOT DEFINED KPS_NCCL_PATH_PYTHON OR KPS_NCCL_PATH_PYTHON)
    find_program(_kps_nccl_path_python NAMES python3 NO_CACHE)
  endif()
  if(_kps_nccl_path_python)
    list(APPEND _kps_nccl_pythons "${_kps_nccl_path_python}")
  endif()
  set(_kps_nccl_wheels)
  foreach(_py ${_kps_nccl_pythons})
    execute_process(COMMAND "${_py}" -c
                    "import sysconfig; p = sysconfig.get_paths(); print(p['purelib']); print(p['platlib'])"
                    OUTPUT_VARIABLE _site RESULT_VARIABLE _rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(_rc EQUAL 0)
      string(REPLACE "\n" ";" _site "${_site}")
      foreach(_dir ${_site})
        if(EXISTS "${_dir}/nvidia/nccl/include/nccl.h")
          list(APPEND _kps_nccl_wheels "${_dir}/nvidia/nccl")
        endif()
      endforeach()
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _kps_nccl_wheels)

  set(_kps_cuda_root "${CUDAToolkit_LIBRARY_ROOT}")
  if(NOT _kps_cuda_root)
    get_filename_component(_kps_cuda_root "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  endif()
  find_path(KPS_NCCL_INCLUDE_DIR nccl.h
    HINTS ${_kps_nccl_hints}
    PATHS ${CUDAToolkit_INCLUDE_DIRS} /usr/include /usr/local/include ${_kps_nccl_wheels}
    PATH_SUFFIXES include
    DOC "Directory holding nccl.h")
  # The library beside the header first (a wheel's or a prefix's), then the others. The
  # versioned name first: it is what the loader opens, and the wheel has no other.
  set(_kps_nccl_beside)
  if(KPS_NCCL_INCLUDE_DIR)
    get_filename_component(_prefix "${KPS_NCCL_INCLUDE_DIR}" DIRECTORY)
    list(APPEND _kps_nccl_beside "${_prefix}/lib" "${_prefix}/lib64" "${_prefix}/lib/x86_64-linux-gnu")
  endif()
  find_library(KPS_NCCL_LIBRARY NAMES libnccl.so.2 nccl NAMES_PER_DIR
    HINTS ${_kps_nccl_hints} ${_kps_nccl_beside}
    PATHS ${CUDAToolkit_LIBRARY_DIR} "${_kps_cuda_root}/lib" "${_kps_cuda_root}/lib64"
          /usr/lib/x86_64-linux-gnu /usr/local/lib ${_kps_nccl_wheels}
    PATH_SUFFIXES lib lib64
    DOC "libnccl.so.2 (opened at run time; KPS does not link it)")

  set(_kps_nccl_problem "")
  if(NOT KPS_NCCL_INCLUDE_DIR)
    set(_kps_nccl_problem "nccl.h not found")
  elseif(NOT KPS_NCCL_LIBRARY)
    set(_kps_nccl_problem "nccl.h found in ${KPS_NCCL_INCLUDE_DIR}, but no libnccl.so.2 or libnccl.so")
  else()
    file(STRINGS "${KPS_NCCL_INCLUDE_DIR}/nccl.h" _defs REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) +[0-9]+")
    set(_ver)
    foreach(_part MAJOR MINOR PATCH)
      string(REGEX MATCH "NCCL_${_part} +([0-9]+)" _m "${_defs}")
      list(APPEND _ver "${CMAKE_MATCH_1}")
    endforeach()
    string(REPLACE ";" "." KPS_NCCL_VERSION "${_ver}")
    if(KPS_NCCL_VERSION VERSION_LESS KPS_NCCL_MIN_VERSION)
      set(_kps_nccl_problem "${KPS_NCCL_INCLUDE_DIR}/nccl.h is NCCL ${KPS_NCCL_VERSION}, older than "
                            "${KPS_NCCL_MIN_VERSION}, the oldest KPS supports")
      string(CONCAT _kps_nccl_problem ${_kps_nccl_problem})
    else()
      set(KPS_NCCL_FOUND TRUE)
    endif()
  endif()

  set(_kps_nccl_where "searched: NCCL_ROOT/NCCL_HOME (${_kps_nccl_hints}), the CUDA toolkit, /usr/include, "
                      "/usr/local/include, /usr/lib/x86_64-linux-gnu, /usr/local/lib, the nvidia-nccl-cu13 wheel "
                      "in (${_kps_nccl_pythons})")
  string(CONCAT _kps_nccl_where ${_kps_nccl_where})
  if(KPS_NCCL_FOUND)
    message(STATUS "kps: NCCL ${KPS_NCCL_VERSION}: ${KPS_NCCL_INCLUDE_DIR}/nccl.h, ${KPS_NCCL_LIBRARY} "
                   "(opened at run time)")
  elseif(KPS_WITH_NCCL STREQUAL "ON")
    message(FATAL_ERROR "KPS_WITH_NCCL=ON, but ${_kps_nccl_problem}; ${_kps_nccl_where}. Pass -DNCCL_ROOT=<prefix>, "
                        "or install the wheel: pip install nvidia-nccl-cu13")
  else()
    message(STATUS "kps: no NCCL (${_kps_nccl_problem}); the collective ops will report that they are unavailable")
  endif()
else()
  message(STATUS "kps: NCCL off (KPS_WITH_NCCL=OFF); the collective ops will report that they are unavailable")
endif()

# Gives `sources` (of targets in this directory) NCCL's include dir and definitions.
function(kps_use_nccl)
  if(KPS_NCCL_FOUND)
    set_source_files_properties(${ARGN} PROPERTIES
      INCLUDE_DIRECTORIES "${KPS_NCCL_INCLUDE_DIR}"
      COMPILE_DEFINITIONS "KPS_HAVE_NCCL=1;KPS_NCCL_LIBRARY_PATH=\"${KPS_NCCL_LIBRARY}\"")
  endif()
endfunction()
