# cmake -DAGENT=... -DHELP2MAN=... -DOUTPUT=nvsmi-agent.1.gz -DEXIT_CODES=.../exit_codes.hpp
#       -DSECTIONS=.../man-sections.h2m [-DSOURCE_DATE_EPOCH=...] -P make-man.cmake
# Makes the man page with help2man from the built program's own --help and --version, and adds a
# section with each subcommand's --help, so that the page says exactly what the program says;
# EXIT STATUS from the enum of exit codes itself, so that the two cannot disagree; EXAMPLES,
# ENVIRONMENT and FILES from SECTIONS.
get_filename_component(work ${OUTPUT} DIRECTORY)
if(SOURCE_DATE_EPOCH)
  set(ENV{SOURCE_DATE_EPOCH} ${SOURCE_DATE_EPOCH}) # help2man dates the page with it
endif()

# The program is run by the name it is installed under, so that its usage lines name it so.
file(MAKE_DIRECTORY ${work}/bin)
file(CREATE_LINK ${AGENT} ${work}/bin/nvsmi-agent SYMBOLIC)
set(ENV{PATH} "${work}/bin:$ENV{PATH}")

# `text` as roff: a backslash is \e, a minus is \- (a minus sign, as in options, not a hyphen),
# and a line may not begin with a dot or an apostrophe.
function(roff_text out text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The subcommands, as the top-level --help lists them.
execute_process(COMMAND ${work}/bin/nvsmi-agent --help OUTPUT_VARIABLE help RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "${AGENT} --help failed")
endif()
string(REGEX REPLACE ".*\nSubcommands:\n" "" listed "${help}")
string(REGEX MATCHALL "\n  [a-z][a-z0-9-]*  " names "\n${listed}")
set(include_text "[SUBCOMMANDS]\n")
foreach(name IN LISTS names)
  string(STRIP "${name}" name)
  execute_process(COMMAND ${work}/bin/nvsmi-agent ${name} --help OUTPUT_VARIABLE text
                  RESULT_VARIABLE failed)
  if(failed)
    message(FATAL_ERROR "${AGENT} ${name} --help failed")
  endif()
  string(REPLACE "${work}/bin/nvsmi-agent" "nvsmi-agent" text "${text}")
  roff_text(text "${text}")
  string(APPEND include_text ".SS \"nvsmi-agent ${name}\"\n.nf\n${text}.fi\n")
endforeach()
if(NOT names)
  message(FATAL_ERROR "found no subcommands in ${AGENT} --help")
endif()

# EXIT STATUS: each "exit_name = N, // what it means" of the enum, in its order.
file(STRINGS ${EXIT_CODES} codes REGEX "^ *exit_[a-z_]+ = [0-9]+,")
if(NOT codes)
  message(FATAL_ERROR "found no exit codes in ${EXIT_CODES}")
endif()
string(APPEND include_text "[EXIT STATUS]\n")
foreach(line IN LISTS codes)
  string(REGEX REPLACE "^ *exit_[a-z_]+ = ([0-9]+),.*" "\\1" number "${line}")
  set(meaning "success")
  if(line MATCHES "// *(.*)$")
    string(STRIP "${CMAKE_MATCH_1}" meaning)
  endif()
  roff_text(meaning "${meaning}")
  string(APPEND include_text ".TP\n.B ${number}\n${meaning}\n")
endforeach()
string(APPEND include_text
  ".TP\n.B 128+N\nstopped by signal N, nvidia\\-smi and what it started killed first (130 for "
  "SIGINT, 143 for SIGTERM)\n.PP\n\\fBcheck\\fR exits as a monitoring plugin instead: 0 OK, 1 "
  "WARNING, 2 CRITICAL, 3 UNKNOWN. \\fBrun\\fR exits with its job's exit code once the job ran.\n\n")
file(READ ${SECTIONS} sections)
string(APPEND include_text "${sections}")
file(WRITE ${work}/subcommands.h2m "${include_text}")

execute_process(
  COMMAND ${HELP2MAN} --no-info --section=1 "--name=reads nvidia-smi into typed records"
          --include=${work}/subcommands.h2m --output=${work}/nvsmi-agent.1 nvsmi-agent
  RESULT_VARIABLE failed)
if(failed)
  message(FATAL_ERROR "help2man failed on ${AGENT}")
endif()
execute_process(COMMAND gzip -9n -f ${work}/nvsmi-agent.1 RESULT_VARIABLE failed)
if(failed OR NOT EXISTS ${OUTPUT})
  message(FATAL_ERROR "gzip failed on ${work}/nvsmi-agent.1")
endif()
