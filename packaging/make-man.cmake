# cmake -DAGENT=... -DHELP2MAN=... -DOUTPUT=nvsmi-agent.1.gz [-DSOURCE_DATE_EPOCH=...] -P make-man.cmake
# Makes the man page with help2man from the built program's own --help and --version, and adds a
# section with each subcommand's --help, so that the page says exactly what the program says.
get_filename_component(work ${OUTPUT} DIRECTORY)
if(SOURCE_DATE_EPOCH)
  set(ENV{SOURCE_DATE_EPOCH} ${SOURCE_DATE_EPOCH}) # help2man dates the page with it
endif()

# The program is run by the name it is installed under, so that its usage lines name it so.
file(MAKE_DIRECTORY ${work}/bin)
file(CREATE_LINK ${AGENT} ${work}/bin/nvsmi-agent SYMBOLIC)
set(ENV{PATH} "${work}/bin:$ENV{PATH}")

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
  # roff: a backslash is \e, a minus is \-, and a line may not begin with a dot or an apostrophe.
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}") # a minus sign, as in options, not a hyphen
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  string(APPEND include_text ".SS \"nvsmi-agent ${name}\"\n.nf\n${text}.fi\n")
endforeach()
if(NOT names)
  message(FATAL_ERROR "found no subcommands in ${AGENT} --help")
endif()
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
