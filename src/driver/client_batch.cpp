// The mark of a client's batch (client_batch.hpp).
#include "client_batch.hpp"

#include <nlohmann/json.hpp>

#include <array>
#include <cstdio>
#include <random>

namespace cronoq::detail {

namespace {
constexpr const char* client_batch_field = "client_batch";
constexpr const char* client_retry_field = "client_retry";
}

std::string new_client_batch_id() {
    std::random_device random;
    std::array<std::uint32_t, 4> words{random(), random(), random(), random()};
    char text[33];
    std::snprintf(text, sizeof text, "%08x%08x%08x%08x", words[0], words[1], words[2], words[3]);
    return text;
}

std::string mark_client_batch(std::string_view options, const ClientBatchMark& mark) {
    nlohmann::json j = nlohmann::json::parse(options);
    j[client_batch_field] = {{"id", mark.id}, {"size", mark.size}, {"index", mark.index}};
    return j.dump();
}

std::optional<ClientBatchMark> client_batch_of(std::string_view options) {
    const nlohmann::json j = nlohmann::json::parse(options);
    const auto it = j.find(client_batch_field);
    if (it == j.end()) return std::nullopt;
    ClientBatchMark mark;
    mark.id = it->at("id").get<std::string>();
    mark.size = it->at("size").get<std::uint32_t>();
    mark.index = it->at("index").get<std::uint32_t>();
    return mark;
}

std::string mark_client_retry(std::string_view options, TaskId replaces) {
    nlohmann::json j = nlohmann::json::parse(options);
    j[client_retry_field] = {{"replaces", replaces.value}};
    return j.dump();
}

std::optional<TaskId> client_retry_of(std::string_view options) {
    const nlohmann::json j = nlohmann::json::parse(options);
    const auto it = j.find(client_retry_field);
    if (it == j.end()) return std::nullopt;
    return TaskId{it->at("replaces").get<std::uint64_t>()};
}

}  // namespace cronoq::detail
