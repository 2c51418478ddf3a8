# driver_thread_safety (tests/CMakeLists.txt): compiles every source of the
# driver (src/driver and its subfolders) with Clang's thread-safety analysis,
# syntax only, warnings as errors: a member annotated CRONOQ_GUARDED_BY the
# engine's mutex touched without it held, or a call that CRONOQ_REQUIRES it
# made without it, fails (include/cronoq/detail/thread_safety.hpp). The
# command line is the one of tests/clang_arguments.cmake.
# -DCXX=<clang++> -DSOURCES_DIR=<src/driver> -DOWN_INCLUDE=<dir> and
# |-separated INCLUDES, IMPLICIT, DEFINITIONS; -DUNITY_DIR=<the cronoq
# target's Unity folder> where the build batches sources: then the batches
# are checked (every source of the target, the driver's among them, in a
# few parses of the headers instead of one per source).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/../clang_arguments.cmake)
cronoq_clang_arguments(arguments "-Wthread-safety;-Werror")
set(sources "")
if(UNITY_DIR)
    file(GLOB sources ${UNITY_DIR}/unity_*_cxx.cxx)
endif()
if(NOT sources)
    file(GLOB_RECURSE sources ${SOURCES_DIR}/*.cpp)
endif()
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
message(STATUS "${n} driver sources (or batches of them) checked under -Wthread-safety")
