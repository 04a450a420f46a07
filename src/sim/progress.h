/*
 * progress.h — one line of progress for a long simulation: simulated time
 * reached, events per second, flows done of all, and an estimate of the
 * time left.
 *
 * On a terminal the line is rewritten in place twice a second; off a
 * terminal (a log, CI) a new line is written every 5 s of wall time, so
 * a run of minutes is seen to move without flooding the log.  Nothing is
 * written for a run that ends within the first interval.  The line goes
 * to stderr and is not part of any output file: a seed still gives the
 * same files byte for byte.  SOFTRNIC_SIM_PROGRESS=0 turns it off.
 *
 * sim_net_run calls its progress hook every 65 536 events (or between
 * windows), which calls sim_progress_update; a loop that steps the engine
 * itself asks sim_progress_due first, one counter test per event, so
 * that only every 65 536th event looks at the clock.
 */
#ifndef SOFTRNIC_SIM_PROGRESS_H
#define SOFTRNIC_SIM_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct sim_progress {
	FILE *out;                      /* NULL: off */
	char label[64];
	bool tty;
	uint64_t stop_ns;               /* the simulated time the run may reach */
	unsigned flows_total;
	double wall_start, wall_next;   /* seconds, monotonic */
	double interval;
	uint64_t countdown;             /* events until the next clock look */
	bool printed;                   /* a line is on the screen */
};

/* Start a run's progress: `label` names it ("sim run", "gbn-loss 1%"). */
void sim_progress_start(struct sim_progress *p, const char *label, uint64_t stop_ns, unsigned flows_total);
/* True when it is time to look at the clock (call once per event). */
static inline bool sim_progress_due(struct sim_progress *p)
{
	return p->out && --p->countdown == 0;
}
/* Look at the clock; print if the interval has passed. */
void sim_progress_update(struct sim_progress *p, uint64_t now_ns, uint64_t events, unsigned flows_running);
/* The run ended: finish the line (on a terminal) and say how long it took
 * if a line was printed. */
void sim_progress_end(struct sim_progress *p, uint64_t now_ns, uint64_t events, unsigned flows_running);

#endif
