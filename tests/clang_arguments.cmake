# The Clang command line shared by the scripts that compile cronoq's code
# with Clang, syntax only (header_check_clang.cmake,
# driver/thread_safety_check.cmake). cronoq's own include folder is an
# ordinary one, so its warnings count; every other folder is a system
# folder, so third-party headers are not judged. The compiler's implicit
# folders are left out: naming /usr/include again with -isystem breaks
# libstdc++'s #include_next.
# Reads OWN_INCLUDE and the |-separated INCLUDES, IMPLICIT, DEFINITIONS;
# sets `out` to the arguments, `extra` coming right after -std.
function(cronoq_clang_arguments out extra)
    foreach(name INCLUDES IMPLICIT DEFINITIONS)
        string(REPLACE "|" ";" ${name} "${${name}}")
    endforeach()
    set(arguments -std=c++20 -fsyntax-only ${extra}
        # Asio 1.22 looks for coroutines only in libc++ under Clang; Clang 14
        # with libstdc++ has them in <coroutine>.
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
    set(${out} "${arguments}" PARENT_SCOPE)
endfunction()
