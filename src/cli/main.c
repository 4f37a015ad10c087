/* kria's entry point: everything happens behind kr_cli_main. */
#include "cli.h"

int main(int argc, char **argv) { return kr_cli_main(argc, argv); }
