/*
 * The pool of child processes behind `simulate --jobs N` (sim.h): up to
 * par tasks at once, each in a child that writes its result to a pipe and
 * exits. A child that ends without writing its whole result (killed,
 * crashed, exited early) closes its pipe first: its task is done without
 * a result, its exit status named, and the others go on. Nothing here
 * waits for a child that has not ended or written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "sim.h"

#define POOL_MAX 16

typedef struct slot {
  int fd;     /* the pipe's read end */
  pid_t pid;
  size_t k;   /* the task */
} slot_t;

/* Start task k in a child writing its result to a pipe: 0, or -1 with
 * why. */
static int start(const kr_sim_pool_t *p, size_t k, void *buf, slot_t *s, char *why,
                 size_t wl) {
  int fds[2];
  if (pipe(fds) != 0) {
    snprintf(why, wl, "could not start (pipe: %s)", strerror(errno));
    return -1;
  }
  fflush(NULL); /* the child must not write our buffered output again */
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    memset(buf, 0, p->size);
    p->run(p->ud, k, buf);
    int ok = kr_write_all(fds[1], buf, p->size);
    _exit(ok == 0 ? 0 : 2);
  }
  int e = errno;
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    snprintf(why, wl, "could not start (fork: %s)", strerror(e));
    return -1;
  }
  *s = (slot_t){.fd = fds[0], .pid = pid, .k = k};
  return 0;
}

/* Read s's result (blocking: its child writes it, then exits), reap the
 * child and report the task. */
static void finish(const kr_sim_pool_t *p, const slot_t *s, void *buf) {
  int got = kr_read_all(s->fd, buf, p->size) == 0;
  close(s->fd);
  int st = 0;
  pid_t r;
  while ((r = waitpid(s->pid, &st, 0)) < 0 && errno == EINTR) {
  }
  if (got) {
    p->done(p->ud, s->k, buf, NULL);
    return;
  }
  char why[160] = "ended without a result";
  if (r >= 0 && WIFSIGNALED(st))
    snprintf(why, sizeof why, "ended without a result (signal %d, %s)", WTERMSIG(st),
             strsignal(WTERMSIG(st)));
  else if (r >= 0 && WIFEXITED(st))
    snprintf(why, sizeof why, "ended without a result (exit status %d)", WEXITSTATUS(st));
  p->done(p->ud, s->k, NULL, why);
}

void kr_sim_pool_run(const kr_sim_pool_t *p, size_t ntasks) {
  int (*poll_fn)(struct pollfd *, nfds_t, int) = p->poll ? p->poll : poll;
  size_t par = p->par < 1 ? 1 : p->par > POOL_MAX ? POOL_MAX : (size_t)p->par;
  void *buf = kr_xmalloc(p->size ? p->size : 1);
  slot_t slot[POOL_MAX];
  struct pollfd pfd[POOL_MAX];
  size_t running = 0, next = 0;
  while (next < ntasks || running) {
    while (running < par && next < ntasks) {
      char why[160];
      size_t k = next++;
      if (start(p, k, buf, &slot[running], why, sizeof why) == 0)
        running++;
      else
        p->done(p->ud, k, NULL, why);
    }
    if (!running) continue;
    for (size_t s = 0; s < running; s++)
      pfd[s] = (struct pollfd){.fd = slot[s].fd, .events = POLLIN};
    size_t s = 0;
    if (poll_fn(pfd, (nfds_t)running, -1) < 0) {
      if (errno == EINTR) continue;
      /* (ENOMEM) wait for the first running task in a blocking read:
       * unread, the running tasks would never be done */
    } else {
      while (s < running && !pfd[s].revents) s++;
      if (s == running) continue;
    }
    finish(p, &slot[s], buf);
    slot[s] = slot[--running];
  }
  free(buf);
}
