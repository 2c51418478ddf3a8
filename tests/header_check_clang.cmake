# headers_compile_clang (tests/CMakeLists.txt): compiles SOURCE, which
# includes every public header, with Clang, syntax only. cronoq's own
# include folder is an ordinary one, so its warnings count; every other
# folder is a system folder, so third-party headers are not judged. The
# compiler's implicit folders are left out: naming /usr/include again with
# -isystem breaks libstdc++'s #include_next.
# -DCXX=<clang++> -DSOURCE=<file> -DOWN_INCLUDE=<dir> and |-separated
# INCLUDES, IMPLICIT, DEFINITIONS, FLAGS.
cmake_minimum_required(VERSION 3.25)
foreach(name INCLUDES IMPLICIT DEFINITIONS FLAGS)
    string(REPLACE "|" ";" ${name} "${${name}}")
endforeach()
set(arguments -std=c++20 -fsyntax-only ${FLAGS}
    # Asio 1.22 looks for coroutines only in libc++ under Clang; Clang 14 with
    # libstdc++ has them in <coroutine>.
    -DASIO_HAS_CO_AWAIT=1)
foreach(definition IN LISTS DEFINITIONS)
    list(APPEND arguments -D${definition})
endforeach()
list(APPEND arguments -I${OWN_INCLUDE})
foreach(dir IN LISTS INCLUDES)
    if(NOT dir STREQUAL OWN_INCLUDE AND NOT dir IN_LIST IMPLICIT)
        list(APPEND arguments -isystem ${dir})
    endif()
endforeach()
execute_process(COMMAND ${CXX} ${arguments} ${SOURCE} RESULT_VARIABLE result)
if(NOT result EQUAL 0)
    message(FATAL_ERROR "the public headers do not compile cleanly under ${CXX}: ${CXX} ${arguments} ${SOURCE}")
endif()
