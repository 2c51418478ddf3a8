# headers_compile_clang (tests/CMakeLists.txt): compiles SOURCE, which
# includes every public header, with Clang, syntax only, on the command
# line of tests/clang_arguments.cmake.
# -DCXX=<clang++> -DSOURCE=<file> -DOWN_INCLUDE=<dir> and |-separated
# INCLUDES, IMPLICIT, DEFINITIONS, FLAGS.
cmake_minimum_required(VERSION 3.25)
string(REPLACE "|" ";" FLAGS "${FLAGS}")
include(${CMAKE_CURRENT_LIST_DIR}/clang_arguments.cmake)
cronoq_clang_arguments(arguments "${FLAGS}")
execute_process(COMMAND ${CXX} ${arguments} ${SOURCE} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "the public headers do not compile cleanly under ${CXX}: ${CXX} ${arguments} ${SOURCE}")
endif()
