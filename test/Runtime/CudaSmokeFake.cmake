# ctest cuda-smoke-fake-driver: kiln-cuda-smoke on the fake driver, with the
# fake fatbin (must pass) and with an artifact the fake cannot load as the
# "bad" one (must be refused with the chip named).
file(MAKE_DIRECTORY ${WORK})
execute_process(COMMAND ${ARTIFACT_TOOL} -o ${WORK}/m.kiln --cuda
  RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-test-artifact failed")
endif()
execute_process(COMMAND ${ARTIFACT_TOOL} -o ${WORK}/bad.kiln --cuda
  --fatbin NOTAFATBIN RESULT_VARIABLE rc)
set(ENV{KILN_LIBCUDA} ${FAKE})
execute_process(COMMAND ${SMOKE} ${WORK}/m.kiln ${WORK}/bad.kiln --runs 20
  --json ${WORK}/smoke.json RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message("${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln-cuda-smoke failed (exit ${rc})")
endif()
string(FIND "${out}" "result: PASS" at)
if(at LESS 0)
  message(FATAL_ERROR "no 'result: PASS'")
endif()
# Without a driver it must stop with the reason (exit 2), not pass.
set(ENV{KILN_LIBCUDA} /nonexistent/libcuda.so.1)
execute_process(COMMAND ${SMOKE} ${WORK}/m.kiln RESULT_VARIABLE rc
  OUTPUT_VARIABLE out)
string(FIND "${out}" "no CUDA device: /nonexistent/libcuda.so.1 not found" at)
if(NOT rc EQUAL 2 OR at LESS 0)
  message(FATAL_ERROR "no-driver case: exit ${rc}, output: ${out}")
endif()
