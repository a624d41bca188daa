// The Catch2 entry point shared by every CPU test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
