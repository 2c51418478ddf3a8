# The ctest prometheus_promtool: runs prometheus_sample (-DSAMPLE) in a
# scratch folder (-DWORK) and checks its output with `promtool check metrics`
# (-DPROMTOOL; Debian package "prometheus"). Fails, never skips, when promtool
# is missing.
if(NOT PROMTOOL OR NOT EXISTS "${PROMTOOL}")
    message(FATAL_ERROR "promtool not found: install the Debian package 'prometheus' (the README's set-up command does)")
endif()
file(REMOVE_RECURSE "${WORK}")
file(MAKE_DIRECTORY "${WORK}")
execute_process(COMMAND "${SAMPLE}" "${WORK}" OUTPUT_FILE "${WORK}/metrics.txt" RESULT_VARIABLE sample_rc)
if(NOT sample_rc EQUAL 0)
    message(FATAL_ERROR "prometheus_sample failed (${sample_rc})")
endif()
file(READ "${WORK}/metrics.txt" text)
foreach(needed "cronoq_tasks_finished_total{pool=\"main\",status=\"succeeded\"} 20"
               "cronoq_store_commits_total " "cronoq_store_commit_seconds_bucket{le=\"+Inf\"} "
               "pool=\"odd \\\"pool\\\" \\\\ with\\nnewline\"")
    string(FIND "${text}" "${needed}" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "the metrics lack: ${needed}\n${text}")
    endif()
endforeach()
execute_process(COMMAND "${PROMTOOL}" check metrics INPUT_FILE "${WORK}/metrics.txt"
    RESULT_VARIABLE check_rc OUTPUT_VARIABLE check_out ERROR_VARIABLE check_err)
if(NOT check_rc EQUAL 0 OR NOT "${check_out}${check_err}" STREQUAL "")
    message(FATAL_ERROR "promtool check metrics (${check_rc}):\n${check_out}${check_err}")
endif()
message(STATUS "promtool check metrics: clean")
