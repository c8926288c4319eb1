# Run after a suite's executable is built (tests/CMakeLists.txt, nvsmi_library_test): writes OUTPUT,
# a ctest script with one test per test case of the source file FILE (Catch2's file-name tag
# [#FILE]), named "PREFIX: TEST CASE", each running that case alone with the properties its
# loader sets in nvsmi_case_properties (tests/CMakeLists.txt), and failing should its spec match
# none (--warn NoTests).
# Catch2's own CMake module does not do: it splits a test case's name at a semicolon.
# Usage: cmake -D EXECUTABLE=... -D FILE=... -D PREFIX=... -D OUTPUT=...
#        -P catch_cases.cmake
execute_process(COMMAND ${EXECUTABLE} "-#" "[#${FILE}]" --list-test-names-only
  OUTPUT_FILE ${OUTPUT}.names RESULT_VARIABLE listed)
# --list-test-names-only exits with the number of test cases it listed.
if(NOT listed MATCHES "^[0-9]+$" OR listed EQUAL 0)
  message(FATAL_ERROR "${EXECUTABLE}: no test case of ${FILE} listed (${listed})")
endif()
# file(STRINGS) keeps a semicolon of a line as part of that line.
file(STRINGS ${OUTPUT}.names names)
list(LENGTH names count)
math(EXPR count_status "${count} % 256")
if(NOT listed EQUAL count_status)
  message(FATAL_ERROR "${EXECUTABLE}: ${count} lines listed for ${FILE}, but it exited ${listed}")
endif()
set(script "")
foreach(name IN LISTS names)
  if(name STREQUAL "")
    continue()
  endif()
  # A test spec that names this case alone: Catch2 reads a comma as "or", brackets as a tag, a
  # quote as quoting and a backslash as an escape, so each is escaped; and a leading "-" as an
  # option, "~" as "not" and a "*" at either end as a wildcard, so those are escaped there.
  string(REPLACE "\\" "\\\\" spec "${name}")
  foreach(special , [ ] "\"")
    string(REPLACE "${special}" "\\${special}" spec "${spec}")
  endforeach()
  if(spec MATCHES "^[-~*]")
    set(spec "\\${spec}")
  endif()
  string(REGEX REPLACE "[*]$" "\\\\*" spec "${spec}")
  string(APPEND script "add_test([==[${PREFIX}: ${name}]==] [==[${EXECUTABLE}]==] --warn NoTests "
         "[==[${spec}]==])\n"
         "set_tests_properties([==[${PREFIX}: ${name}]==] PROPERTIES "
         "\${nvsmi_case_properties})\n")
endforeach()
file(WRITE ${OUTPUT} "${script}")
