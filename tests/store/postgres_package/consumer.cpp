// Connects to a server that is not there: the installed headers and library
// are enough to build, link and get the store's own error.
#include <cronoq/store/postgres_store.hpp>

int main() {
    cronoq::PostgresStoreConfig config;
    config.connect_timeout = std::chrono::milliseconds(0);
    try {
        cronoq::PostgresStore::connect("host=/nonexistent-cronoq-consumer dbname=x", config);
    } catch (const cronoq::StoreError& error) {
        return error.kind() == cronoq::StoreErrorKind::Io ? 0 : 1;
    }
    return 1;
}
