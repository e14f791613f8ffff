# cmake -DIN=<file> -DOUT=<header> -DNAME=<identifier> -P EdriEmbedBytes.cmake
# Writes <header> defining `inline constexpr char NAME[]` with IN's bytes,
# on one line (what a compiler reads, not a person).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" digits)
math(EXPR size "${digits} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," body "${hex}")
file(WRITE ${OUT} "// Generated from ${IN}: do not edit.\n#pragma once\n\n"
  "inline constexpr char ${NAME}[${size}] = {\n  ${body}\n};\n")
