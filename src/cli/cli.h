/*
 * Command-line front end: `kria <command> [args]`. Each command is one
 * function taking the arguments after its name (argv[0] is the command
 * name) and returning the process exit status.
 */
#ifndef KRIA_CLI_H
#define KRIA_CLI_H

#include "kria/version.h"

int kr_cli_main(int argc, char **argv);

/* Print `kria: error: <kind>: <detail>` to stderr (kind from kr_err_name
 * when err < 0, else the literal "usage"), with <3> before it when stderr
 * is the journal (see log.h). */
void kr_cli_error(int err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* FILE's configuration, loaded and finished; NULL with its errors told. */
struct kr_config;
struct kr_config *kr_cli_load_config(const char *path);

int kr_cmd_url(int argc, char **argv);
int kr_cmd_fetch(int argc, char **argv);
int kr_cmd_robots(int argc, char **argv);
int kr_cmd_crawl(int argc, char **argv);
int kr_cmd_cdx(int argc, char **argv);
int kr_cmd_wacz(int argc, char **argv);
int kr_cmd_simulate(int argc, char **argv);
int kr_cmd_status(int argc, char **argv);
int kr_cmd_report(int argc, char **argv);
int kr_cmd_demo(int argc, char **argv);
int kr_cmd_cluster(int argc, char **argv);

#endif
