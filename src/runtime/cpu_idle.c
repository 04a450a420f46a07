/*
 * cpu_idle.c — may a thread busy-wait without taking a CPU from anyone?
 * (contract in cpu_idle.h).
 *
 * Trade-off: /proc/loadavg counts runnable tasks on all CPUs, not on the
 * CPUs this process may use, so a machine busy elsewhere (other cpusets)
 * says "no" more often than it should; a scheduler hint (PSI, or
 * sched_getcpu plus per-CPU run-queue lengths) would be sharper.
 */
#include "runtime/cpu_idle.h"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

void srt_cpu_idle_open(struct srt_cpu_idle *c)
{
	cpu_set_t set;

	c->fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
	c->ncpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
	c->checked_ns = 0;
	c->idle = false;
}

void srt_cpu_idle_close(struct srt_cpu_idle *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/* "0.81 1.33 1.53 2/77 14894": the number before the slash. */
static long runnable_tasks(int fd)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	int field = 0;
	for (char *p = buf; *p; p++) {
		if (*p == ' ' && ++field == 3)
			return strtol(p + 1, NULL, 10);
	}
	return -1;
}

bool srt_cpu_idle(struct srt_cpu_idle *c, uint64_t now_ns)
{
	if (c->fd < 0)
		return false;
	if (now_ns - c->checked_ns >= SRT_CPU_IDLE_CHECK_NS) {
		long r = runnable_tasks(c->fd);
		c->idle = r > 0 && r <= c->ncpus;
		c->checked_ns = now_ns;
	}
	return c->idle;
}
