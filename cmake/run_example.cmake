# ctest driver for an outside example (examples/KPS_EXAMPLE_NAME): installs the KPS build
# tree into a scratch prefix of its own, then configures and builds the example against
# that install alone and runs its test program, KPS_EXAMPLE_TEST.
set(prefix ${KPS_BINARY_DIR}/${KPS_EXAMPLE_NAME}_example/install)
set(build ${KPS_BINARY_DIR}/${KPS_EXAMPLE_NAME}_example/build)
file(REMOVE_RECURSE ${prefix})

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${KPS_EXAMPLE_NAME} example: `${ARGN}` failed (${rc})")
  endif()
endfunction()

run(${CMAKE_COMMAND} --install ${KPS_BINARY_DIR} --prefix ${prefix})
# The search paths travel in the environment (colon-separated there), since a ';' list
# on execute_process's command line would be split into separate arguments.
set(ENV{CMAKE_PREFIX_PATH} "${prefix}:${KPS_PREFIX_PATH}")
set(module_args)
if(KPS_MODULE_PATH)
  set(module_args "-DCMAKE_MODULE_PATH=${KPS_MODULE_PATH}")
endif()
run(${CMAKE_COMMAND} -S ${KPS_EXAMPLE_DIR} -B ${build} -DCMAKE_BUILD_TYPE=Release ${module_args}
    "-DCMAKE_CUDA_ARCHITECTURES=${KPS_CUDA_ARCHITECTURES}")
run(${CMAKE_COMMAND} --build ${build} -j 2)
run(${build}/${KPS_EXAMPLE_TEST})
