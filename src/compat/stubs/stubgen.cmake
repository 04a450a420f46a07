# stubgen.cmake — turns a stand-in symbol list (rdmacm.list, mlx5.list,
# efa.list) into the C source and the linker version script of a library
# that exports exactly those symbols, each answering "not supported".
#
# Called with -P (or include()) and these variables set:
#   LIST     the .list file: "<version> <symbol> <return-kind>" per line,
#            a version in parentheses being a non-default (name@VER) one
#   OUT_C    the C file to write
#   OUT_MAP  the version script to write
#   ERRNO    the errno every stub sets (ENOSYS, EOPNOTSUPP)
#   SKIP     (optional) names implemented elsewhere in the library: they
#            get no stub but stay in the version script
#
# Return kinds (the stub's return register is all a caller sees):
#   ptr NULL | errno the errno value | minus1 -1 | void | false 0 |
#   zero 0 | str a fixed "unknown" string

file(STRINGS "${LIST}" lines)
# Pass 1: which names also have a non-default (@) version.
set(rows "")
set(has_hidden "")
foreach(line IN LISTS lines)
  if(line MATCHES "^[ \t]*#" OR line MATCHES "^[ \t]*$")
    continue()
  endif()
  string(REGEX REPLACE "[ \t]+" "," row "${line}")
  list(APPEND rows "${row}")
  if(row MATCHES "^\\(.*\\),([^,]+),")
    list(APPEND has_hidden "${CMAKE_MATCH_1}")
  endif()
endforeach()

# Pass 2: one stub per row.  A name with two versions gets a private C
# name per version and explicit .symver aliases (name@VER, name@@VER):
# a plain definition listed in two nodes would land in the first one.
set(versions "")
set(c "/* Generated from ${LIST} by stubgen.cmake: do not edit. */\n")
string(APPEND c "#include <errno.h>\n#include <stdbool.h>\n#include <stddef.h>\n\n")
foreach(row IN LISTS rows)
  string(REPLACE "," ";" f "${row}")
  list(GET f 0 ver)
  list(GET f 1 name)
  list(GET f 2 kind)
  set(alias "")
  if(ver MATCHES "^\\((.*)\\)$")
    set(ver "${CMAKE_MATCH_1}")
    set(cname "sr_hidden_${name}")
    set(alias "${name}@${ver}")
  elseif(name IN_LIST has_hidden)
    set(cname "sr_default_${name}")
    set(alias "${name}@@${ver}")
  else()
    set(cname "${name}")
  endif()
  # Every name is listed in its node, or `local: *` would hide it.
  list(APPEND syms_${ver} "${name}")
  list(APPEND versions "${ver}")
  if(name IN_LIST SKIP)
    continue()
  endif()
  if(kind STREQUAL "ptr")
    string(APPEND c "void *${cname}(void);\nvoid *${cname}(void) { errno = ${ERRNO}; return NULL; }\n")
  elseif(kind STREQUAL "errno")
    string(APPEND c "int ${cname}(void);\nint ${cname}(void) { errno = ${ERRNO}; return ${ERRNO}; }\n")
  elseif(kind STREQUAL "minus1")
    string(APPEND c "long ${cname}(void);\nlong ${cname}(void) { errno = ${ERRNO}; return -1; }\n")
  elseif(kind STREQUAL "void")
    string(APPEND c "void ${cname}(void);\nvoid ${cname}(void) { errno = ${ERRNO}; }\n")
  elseif(kind STREQUAL "false" OR kind STREQUAL "zero")
    string(APPEND c "long ${cname}(void);\nlong ${cname}(void) { errno = ${ERRNO}; return 0; }\n")
  elseif(kind STREQUAL "str")
    string(APPEND c "const char *${cname}(void);\nconst char *${cname}(void) { return \"UNKNOWN EVENT\"; }\n")
  else()
    message(FATAL_ERROR "${LIST}: unknown return kind '${kind}' for ${name}")
  endif()
  if(alias)
    string(APPEND c "__asm__(\".symver ${cname}, ${alias}\");\n")
  endif()
endforeach()

list(REMOVE_DUPLICATES versions)
list(SORT versions COMPARE NATURAL)
set(map "/* Generated from ${LIST} by stubgen.cmake: do not edit. */\n")
set(prev "")
foreach(ver IN LISTS versions)
  string(APPEND map "${ver} {\n")
  if(syms_${ver})
    string(APPEND map "\tglobal:\n")
    foreach(s IN LISTS syms_${ver})
      string(APPEND map "\t\t${s};\n")
    endforeach()
  endif()
  if(prev STREQUAL "")
    string(APPEND map "\tlocal: *;\n};\n")
  else()
    string(APPEND map "} ${prev};\n")
  endif()
  set(prev "${ver}")
endforeach()

file(WRITE "${OUT_C}.tmp" "${c}")
file(WRITE "${OUT_MAP}.tmp" "${map}")
# Rewrite only on change, so an unchanged list does not relink.
file(COPY_FILE "${OUT_C}.tmp" "${OUT_C}" ONLY_IF_DIFFERENT)
file(COPY_FILE "${OUT_MAP}.tmp" "${OUT_MAP}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT_C}.tmp" "${OUT_MAP}.tmp")
