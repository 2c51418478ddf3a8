// Opens a store, commits nothing, reads it back: the installed headers and
// library are enough.
#include <cronoq/codec.hpp>
#include <cronoq/store/sqlite_store.hpp>

#include <filesystem>
#include <string>
#include <unistd.h>

int main() {
    const auto file = std::filesystem::temp_directory_path() / ("cronoq-consumer-" + std::to_string(::getpid()) + ".db");
    int status = 0;
    {
        auto store = cronoq::SqliteStore::open(file);
        if (!store->list(cronoq::TaskStatus::Ready, 10).empty()) status = 1;
        if (cronoq::codec<int>::decode(cronoq::codec<int>::encode(3)) != 3) status = 1;
    }
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(file.string() + suffix);
    return status;
}
