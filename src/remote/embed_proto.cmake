# Writes OUTPUT, a C++ source defining cronoq::detail::workers_proto_text
# (the text of INPUT), for cronoq-worker-proto.
file(READ ${INPUT} text)
string(FIND "${text}" ")cronoq_proto\"" clash)
if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${INPUT} contains the raw string delimiter )cronoq_proto\"")
endif()
file(WRITE ${OUTPUT}.tmp "// Generated from ${INPUT}: do not edit.\n#include <string_view>\n\n"
    "namespace cronoq::detail {\nextern const std::string_view workers_proto_text;\n"
    "const std::string_view workers_proto_text = R\"cronoq_proto(${text})cronoq_proto\";\n}\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
