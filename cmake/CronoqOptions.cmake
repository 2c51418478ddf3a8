# Build options and the warning set shared by every cronoq target.
option(CRONOQ_BUILD_TESTS "Build the test suite" ${PROJECT_IS_TOP_LEVEL})
option(CRONOQ_BUILD_EXAMPLES "Build the examples" ${PROJECT_IS_TOP_LEVEL})
option(CRONOQ_BUILD_BENCHMARKS "Build the benchmarks" OFF)
option(CRONOQ_WERROR "Treat warnings as errors" OFF)
option(CRONOQ_BUILD_FUZZERS "Build the libFuzzer targets in tests/fuzz (Clang only)" OFF)
# Libraries and test binaries compile their sources in batches, one
# translation unit per batch (cronoq_unity below says why); OFF compiles
# each file alone, quicker when editing one file.
option(CRONOQ_UNITY_BUILD "Compile sources in batches (unity builds)" ON)
set(CRONOQ_SANITIZE "" CACHE STRING "Sanitizers to build with: address,undefined or thread")

# Optional components, each with a dependency (docs/guide/durability.md, docs/remote.md,
# docs/guide/dashboard.md): AUTO builds it
# when the dependency is found, ON requires it (configuring fails without
# it), OFF leaves it out.
foreach(feature IN ITEMS SQLITE POSTGRES GRPC DASHBOARD)
    set(CRONOQ_WITH_${feature} AUTO CACHE STRING "Build the ${feature} component: AUTO, ON or OFF")
    set_property(CACHE CRONOQ_WITH_${feature} PROPERTY STRINGS AUTO ON OFF)
endforeach()

# cronoq_find_feature(<FEATURE> <package> [find_package arguments...]) finds
# the package as CRONOQ_WITH_<FEATURE> asks and sets CRONOQ_HAVE_<FEATURE>.
macro(cronoq_find_feature feature package)
    string(TOUPPER "${CRONOQ_WITH_${feature}}" _cronoq_mode)
    if(_cronoq_mode STREQUAL "AUTO")
        find_package(${package} ${ARGN} QUIET)
        set(CRONOQ_HAVE_${feature} ${${package}_FOUND})
    elseif(CRONOQ_WITH_${feature})
        find_package(${package} ${ARGN})
        if(NOT ${package}_FOUND)
            message(FATAL_ERROR "CRONOQ_WITH_${feature}=ON but ${package} was not found")
        endif()
        set(CRONOQ_HAVE_${feature} ON)
    else()
        set(CRONOQ_HAVE_${feature} OFF)
    endif()
    if(CRONOQ_HAVE_${feature})
        message(STATUS "cronoq: building the ${feature} component (CRONOQ_WITH_${feature}=${CRONOQ_WITH_${feature}})")
    else()
        message(STATUS "cronoq: not building the ${feature} component (CRONOQ_WITH_${feature}=${CRONOQ_WITH_${feature}})")
    endif()
endmacro()

# The linker: lld when the compiler can use it (Debian's `lld`), else the
# toolchain's default. A Debug build links about twenty binaries of 30-80 MB
# (debug information); ld.bfd takes 8 s for the largest, lld 1.5 s
# (docs/decisions.md, "Linking with lld"). Only when cronoq is the top-level
# project: a parent project chooses its own linker.
set(CRONOQ_LINKER "AUTO" CACHE STRING "Linker for cronoq's own binaries: AUTO (lld if usable), DEFAULT, or a -fuse-ld= value")
if(PROJECT_IS_TOP_LEVEL AND NOT CRONOQ_LINKER STREQUAL "DEFAULT")
    include(CheckLinkerFlag)
    set(_cronoq_ld "${CRONOQ_LINKER}")
    if(_cronoq_ld STREQUAL "AUTO")
        set(_cronoq_ld lld)
    endif()
    check_linker_flag(CXX "-fuse-ld=${_cronoq_ld}" CRONOQ_HAVE_LD_${_cronoq_ld})
    if(CRONOQ_HAVE_LD_${_cronoq_ld})
        add_link_options("-fuse-ld=${_cronoq_ld}")
    elseif(NOT CRONOQ_LINKER STREQUAL "AUTO")
        message(FATAL_ERROR "CRONOQ_LINKER=${CRONOQ_LINKER}: the compiler cannot link with -fuse-ld=${_cronoq_ld}")
    endif()
endif()

if(CRONOQ_SANITIZE)
    if(NOT CRONOQ_SANITIZE MATCHES "^(address,undefined|undefined,address|address|undefined|thread)$")
        message(FATAL_ERROR "CRONOQ_SANITIZE must be address,undefined or thread, not '${CRONOQ_SANITIZE}'")
    endif()
    add_compile_options(-fsanitize=${CRONOQ_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    # Line tables are what a sanitizer's report needs; full debug information
    # (variables) in a Debug build costs about 13 % more compile time
    # (tests/CMakeLists.txt keeps the tests at -g1 for the same reason).
    add_compile_options($<$<CONFIG:Debug>:-g1>)
    add_link_options(-fsanitize=${CRONOQ_SANITIZE})
    if(CRONOQ_SANITIZE MATCHES "address|undefined")
        # Executables link without PIE. Every check of UndefinedBehaviorSanitizer
        # and every global of AddressSanitizer has static data pointing at
        # names and source locations: as a PIE, test_driver carried 2.8
        # million relative relocations, applied at each start, and started in
        # 0.45 s against 0.24 s without PIE. The suite starts a process per
        # test, and more for the crash tests (docs/decisions.md, "Sanitizer
        # builds link without PIE").
        add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
    endif()
    if(CRONOQ_SANITIZE STREQUAL "thread" AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        # GCC 12 warns that TSan does not model Asio's atomic_thread_fence.
        add_compile_options(-Wno-tsan)
    endif()
endif()

if(CRONOQ_BUILD_FUZZERS)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        message(FATAL_ERROR "CRONOQ_BUILD_FUZZERS needs Clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}")
    endif()
    if(CRONOQ_SANITIZE)
        message(FATAL_ERROR "CRONOQ_BUILD_FUZZERS brings its own sanitizers; leave CRONOQ_SANITIZE empty")
    endif()
    if(NOT CRONOQ_BUILD_TESTS)
        message(WARNING "CRONOQ_BUILD_FUZZERS: the fuzz targets live in tests/, which CRONOQ_BUILD_TESTS=OFF skips")
    endif()
    # Coverage feedback must reach into the library, where the parsers and
    # validators live, not only into the fuzz targets; the targets add the
    # libFuzzer runtime (-fsanitize=fuzzer) when they link.
    # -fno-sanitize=function: with it, Clang 14's backend rejects coroutines
    # ("Cannot represent a difference across sections", LLVM issue 49689).
    add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function -fno-omit-frame-pointer
        -fno-sanitize-recover=all)
    add_link_options(-fsanitize=address,undefined)
    # Asio 1.22 enables co_await under Clang only with libc++'s
    # <experimental/coroutine>; Clang 14 with libstdc++ supports C++20
    # coroutines, which Asio then finds through <coroutine>.
    add_compile_definitions(ASIO_HAS_CO_AWAIT=1)
endif()

function(cronoq_warnings target)
    # -Wno-missing-field-initializers: the configuration structs are meant to be
    # initialised partially (`Bounds{100}`, `RetryPolicy{3, 1ms}`).
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers
        $<$<BOOL:${CRONOQ_WERROR}>:-Werror>)
endfunction()

# cronoq_unity(<target>): the target's sources compile in batches of 8, each
# batch one translation unit. Most of a file's compile time goes to parsing
# and instantiating the same headers (Asio, nlohmann/json, the scheduler's
# templates); a batch does that once for all its files. Measured on a clean
# Debug build: the engine's 18 files take 28 s of CPU as 3 batches against
# 71 s one by one. Names in a file's anonymous namespace must therefore be
# unique across its target.
function(cronoq_unity target)
    if(NOT CRONOQ_UNITY_BUILD)
        return()
    endif()
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
    # GCC takes a batched file for a header, where a class with a member of a
    # type from an anonymous namespace is worth a warning; in a source file
    # it is not.
    target_compile_options(${target} PRIVATE $<$<CXX_COMPILER_ID:GNU>:-Wno-subobject-linkage>)
endfunction()
