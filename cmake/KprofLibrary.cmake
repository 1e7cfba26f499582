# kprof_library(NAME SOURCE...): the static library kprof_NAME of src/NAME/.
#
# Its include root, build/include/NAME, holds a single link NAME -> src/NAME: `#include "NAME/x.h"`
# works in the library and in whatever links it, and nothing else of src/ is reachable from it.
# A library sees another's headers only by linking it (PUBLIC where its own headers include the
# other's), so an include against the allowed arrows (ARCHITECTURE.md, "Layers") is a "No such
# file" compile error, not a convention. tests/layering checks that it stays so.
function(kprof_library name)
  add_library(kprof_${name} STATIC ${ARGN})
  set(root ${PROJECT_BINARY_DIR}/include/${name})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${PROJECT_SOURCE_DIR}/src/${name} ${root}/${name} SYMBOLIC)
  target_include_directories(kprof_${name} PUBLIC ${root})
  target_link_libraries(kprof_${name} PRIVATE kprof_warnings fmt::fmt)
endfunction()
