/*
 * measure — run a command and report its wall time and resource use.
 *
 * Like GNU time, but with microsecond resolution and bounded in time:
 *
 *   measure [-o FILE] [-t SECONDS] -- COMMAND [ARG...]
 *
 * runs COMMAND in its own process group, waits for it, and writes one line
 *
 *   wall_s user_s sys_s maxrss_kb exit
 *
 * (space separated, seconds with 6 decimals) to FILE or stderr. user/sys/
 * maxrss come from wait4() and so include every descendant the command
 * waited for (threads always count). With -t, the group gets SIGTERM after
 * SECONDS and SIGKILL 5 s later; exit is then 124, as with timeout(1).
 * SIGTERM, SIGINT and SIGHUP sent to measure are passed on to the group,
 * so an outer timeout(1) reaches the command too. measure's own exit status
 * is the command's (128+signal when killed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t alarmed;

static volatile sig_atomic_t terminated;

static void on_alarm(int sig)
{
	(void)sig;
	alarmed++;
}

static void on_term(int sig)
{
	terminated = sig;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	unsigned limit = 0;
	int c;

	while ((c = getopt(argc, argv, "+o:t:")) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 't': limit = (unsigned)strtoul(optarg, NULL, 10); break;
		default: goto usage;
		}
	}
	if (optind >= argc)
		goto usage;

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART: wait4 returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	sa.sa_handler = on_term; /* forwarded to the command's process group */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("measure: fork");
		return 125;
	}
	if (pid == 0) {
		setpgid(0, 0);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "measure: %s: %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);
	if (limit)
		alarm(limit);

	int status = 0, timed_out = 0;
	struct rusage ru;
	for (;;) {
		pid_t r = wait4(pid, &status, 0, &ru);
		if (r == pid)
			break;
		if (r < 0 && errno != EINTR) {
			perror("measure: wait4");
			return 125;
		}
		if (terminated) {
			kill(-pid, terminated);
			terminated = 0;
		}
		if (alarmed == 1 && !timed_out) {
			timed_out = 1;
			kill(-pid, SIGTERM);
			alarm(5);
		} else if (alarmed >= 2) {
			kill(-pid, SIGKILL);
		}
	}
	alarm(0);
	double wall = now() - t0;

	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (timed_out)
		code = 124;

	FILE *f = out ? fopen(out, "w") : stderr;
	if (!f) {
		perror("measure: output");
		return 125;
	}
	fprintf(f, "%.6f %ld.%06ld %ld.%06ld %ld %d\n", wall, (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec,
		(long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec, ru.ru_maxrss, code);
	if (out)
		fclose(f);
	return code;

usage:
	fprintf(stderr, "usage: measure [-o FILE] [-t SECONDS] -- COMMAND [ARG...]\n");
	return 125;
}
