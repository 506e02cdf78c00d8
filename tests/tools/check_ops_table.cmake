# The `ops_table` test: docs/ops.md must be exactly what `kps list --markdown` prints, so
# the op table in the docs cannot drift from the registered schemas and kernels.
#
#   cmake -DKPS_TOOL=build/kps -DOPS_MD=docs/ops.md -DGENERATED=build/tests/ops.md \
#         -P tests/tools/check_ops_table.cmake
execute_process(COMMAND ${KPS_TOOL} list --markdown
                OUTPUT_VARIABLE table ERROR_VARIABLE warnings RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "'${KPS_TOOL} list --markdown' failed (exit code ${rc}):\n${warnings}")
endif()
if(NOT warnings STREQUAL "")
  message(FATAL_ERROR "'${KPS_TOOL} list --markdown' reported registration problems:\n${warnings}")
endif()
file(READ ${OPS_MD} want)
if(NOT table STREQUAL want)
  file(WRITE ${GENERATED} "${table}")
  message(NOTICE
    "docs/ops.md differs from the registry (an op, input, attribute, kernel or doc changed).\n"
    "Regenerate it and commit the result:\n"
    "  ${KPS_TOOL} list --markdown > ${OPS_MD}\n"
    "Differences (- docs/ops.md, + the registry):")
  find_program(_diff diff)
  if(_diff)
    execute_process(COMMAND ${_diff} -u ${OPS_MD} ${GENERATED})
  else()
    message(NOTICE "(no diff program here; the generated table is ${GENERATED})")
  endif()
  message(FATAL_ERROR "docs/ops.md is out of date: regenerate it as above")
endif()
message(STATUS "docs/ops.md matches 'kps list --markdown'")
