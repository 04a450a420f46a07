# embed_file.cmake — writes a C file holding a file's bytes as an array,
# so a program carries what it would otherwise have to find at run time
# (the AF_XDP port's BPF object, src/runtime/xdp_steer.bpf.c).
#   cmake -DIN=file -DOUT=file.c -DNAME=symbol -P embed_file.cmake
# Defines `const unsigned char NAME[]` and `const size_t NAME_len`.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" n)
math(EXPR bytes "${n} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," body "${hex}")
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){16})" "\\1\n\t" body "${body}")
file(WRITE "${OUT}"
  "/* Made by scripts/cmake/embed_file.cmake from ${IN}: do not edit. */\n"
  "#include <stddef.h>\n"
  "const unsigned char ${NAME}[] = {\n\t${body}\n};\n"
  "const size_t ${NAME}_len = ${bytes};\n")
