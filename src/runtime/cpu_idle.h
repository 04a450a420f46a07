/*
 * cpu_idle.h — may a thread busy-wait without taking a CPU from anyone?
 *
 * The progress thread keeps reading its socket for a short while after a
 * packet instead of sleeping (progress.c, SRT_THREAD_SPIN_NS), but only
 * while every runnable task on the machine has a CPU of its own: on a
 * 2-core machine where two programs spin on memory, a spinning progress
 * thread would take turns with them at time-slice pace (measured: 2-4 ms
 * round trips).  The kernel's count of runnable tasks is the fourth field
 * of /proc/loadavg ("running/total"); it is read at most once per
 * SRT_CPU_IDLE_CHECK_NS.  Without /proc the answer is always "no".
 * One owner (the progress thread), no locking.
 */
#ifndef SOFTRNIC_RUNTIME_CPU_IDLE_H
#define SOFTRNIC_RUNTIME_CPU_IDLE_H

#include <stdbool.h>
#include <stdint.h>

#define SRT_CPU_IDLE_CHECK_NS (1000ull * 1000)

struct srt_cpu_idle {
	int fd;                 /* /proc/loadavg, or -1 */
	int ncpus;              /* CPUs this process may run on */
	uint64_t checked_ns;    /* last read */
	bool idle;              /* runnable tasks <= ncpus at that read */
};

void srt_cpu_idle_open(struct srt_cpu_idle *c);
void srt_cpu_idle_close(struct srt_cpu_idle *c);
/* True if, at the last read (refreshed when older than
 * SRT_CPU_IDLE_CHECK_NS), no runnable task was waiting for a CPU. */
bool srt_cpu_idle(struct srt_cpu_idle *c, uint64_t now_ns);

#endif
