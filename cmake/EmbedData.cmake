# embed_text_file(OUTPUT NAMESPACE FUNCTION INPUT): writes a .cpp defining
# `const char* NAMESPACE::FUNCTION()` returning INPUT's text; reconfigures when INPUT changes.
function(embed_text_file OUTPUT NAMESPACE FUNCTION INPUT)
  file(READ ${INPUT} CONTENT)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${INPUT})
  file(WRITE ${OUTPUT}.tmp
    "// Generated from ${INPUT} by cmake/EmbedData.cmake; do not edit.\n"
    "namespace ${NAMESPACE} {\nconst char* ${FUNCTION}() {\n  return R\"kprof_data(${CONTENT})kprof_data\";\n}\n}\n")
  file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
endfunction()
