#include <cronoq/cronoq.hpp>
int main() {}
