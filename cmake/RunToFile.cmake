# cmake -DOUTPUT=FILE -P RunToFile.cmake -- PROGRAM ARGS...: PROGRAM's standard output into FILE
# (the build's way of writing what kprof generates: completion scripts, the man page); fails the
# build when PROGRAM fails.
set(command "")
set(seen_dashes OFF)
foreach(i RANGE ${CMAKE_ARGC})
  if(seen_dashes AND DEFINED CMAKE_ARGV${i})
    list(APPEND command "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen_dashes ON)
  endif()
endforeach()
execute_process(COMMAND ${command} OUTPUT_FILE ${OUTPUT}.tmp RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  file(REMOVE ${OUTPUT}.tmp)
  message(FATAL_ERROR "${command}: ${status}")
endif()
file(RENAME ${OUTPUT}.tmp ${OUTPUT})
