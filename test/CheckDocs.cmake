# Fails when docs/dialect/ (checked in) differs from the op documentation that
# mlir-tblgen generates from the ODS now: run `ninja -C build kiln-doc`.
foreach(family ${FAMILIES})
  set(generated "${GENERATED_DIR}/Kiln${family}Ops.md")
  set(checked_in "${SOURCE_DIR}/Kiln${family}Ops.md")
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${generated}" "${checked_in}"
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "docs/dialect/Kiln${family}Ops.md is out of date with the ODS: run `ninja -C build kiln-doc` and commit")
  endif()
endforeach()
message(STATUS "docs/dialect is up to date")
