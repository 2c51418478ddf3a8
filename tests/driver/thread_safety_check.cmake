# driver_thread_safety (tests/CMakeLists.txt): compiles every source of the
# driver (src/driver and its subfolders) with Clang's thread-safety analysis,
# syntax only, warnings as errors: a member annotated CRONOQ_GUARDED_BY the
# engine's mutex touched without it held, or a call that CRONOQ_REQUIRES it
# made without it, fails (include/cronoq/detail/thread_safety.hpp). As in
# headers_compile_clang, cronoq's include folder is an ordinary one and
# every other folder a system one; the implicit folders are left out.
# -DCXX=<clang++> -DSOURCES_DIR=<src/driver> -DOWN_INCLUDE=<dir> and
# |-separated INCLUDES, IMPLICIT, DEFINITIONS.
cmake_minimum_required(VERSION 3.25)
foreach(name INCLUDES IMPLICIT DEFINITIONS)
    string(REPLACE "|" ";" ${name} "${${name}}")
endforeach()
set(arguments -std=c++20 -fsyntax-only -Wthread-safety -Werror
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
file(GLOB_RECURSE sources ${SOURCES_DIR}/*.cpp)
list(SORT sources)
set(failed "")
foreach(source IN LISTS sources)
    execute_process(COMMAND ${CXX} ${arguments} ${source} RESULT_VARIABLE result)
    if(NOT result EQUAL 0)
        list(APPEND failed ${source})
    endif()
endforeach()
if(failed)
    list(JOIN failed "\n  " failed)
    message(FATAL_ERROR "the driver's locking does not check under ${CXX} -Wthread-safety:\n  ${failed}\n(${CXX} ${arguments} <source>)")
endif()
list(LENGTH sources n)
message(STATUS "${n} driver sources checked under -Wthread-safety")
