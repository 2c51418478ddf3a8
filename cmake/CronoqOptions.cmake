# Build options and the warning set shared by every cronoq target.
option(CRONOQ_BUILD_TESTS "Build the test suite" ${PROJECT_IS_TOP_LEVEL})
option(CRONOQ_BUILD_EXAMPLES "Build the examples" ${PROJECT_IS_TOP_LEVEL})
option(CRONOQ_BUILD_BENCHMARKS "Build the benchmarks" OFF)
option(CRONOQ_WERROR "Treat warnings as errors" OFF)
set(CRONOQ_SANITIZE "" CACHE STRING "Sanitizers to build with: address,undefined or thread")

if(CRONOQ_SANITIZE)
    if(NOT CRONOQ_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
        message(FATAL_ERROR "CRONOQ_SANITIZE must be address,undefined or thread, not '${CRONOQ_SANITIZE}'")
    endif()
    add_compile_options(-fsanitize=${CRONOQ_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${CRONOQ_SANITIZE})
    if(CRONOQ_SANITIZE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        # GCC 12 warns that TSan does not model Asio's atomic_thread_fence.
        add_compile_options(-Wno-tsan)
    endif()
endif()

function(cronoq_warnings target)
    # -Wno-missing-field-initializers: the configuration structs are meant to be
    # initialised partially (`Bounds{100}`, `RetryPolicy{3, 1ms}`).
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers
        $<$<BOOL:${CRONOQ_WERROR}>:-Werror>)
endfunction()
