/*
 * progress.c — the progress line of a long simulation (progress.h).
 */
#include "sim/progress.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHECK_EVERY 65536u

static double wall_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

void sim_progress_start(struct sim_progress *p, const char *label, uint64_t stop_ns, unsigned flows_total)
{
	const char *env = getenv("SOFTRNIC_SIM_PROGRESS");

	memset(p, 0, sizeof(*p));
	if (env && !strcmp(env, "0"))
		return;
	p->out = stderr;
	snprintf(p->label, sizeof(p->label), "%s", label);
	p->tty = isatty(fileno(stderr)) != 0;
	p->stop_ns = stop_ns;
	p->flows_total = flows_total;
	p->interval = p->tty ? 0.5 : 5.0;
	p->wall_start = wall_now();
	p->wall_next = p->wall_start + p->interval;
	p->countdown = CHECK_EVERY;
}

/* "1h02m", "3m05s", "12s" */
static void fmt_duration(char *buf, size_t cap, double s)
{
	unsigned long t = s < 0 ? 0 : (unsigned long)(s + 0.5);

	if (t >= 3600)
		snprintf(buf, cap, "%luh%02lum", t / 3600, t / 60 % 60);
	else if (t >= 60)
		snprintf(buf, cap, "%lum%02lus", t / 60, t % 60);
	else
		snprintf(buf, cap, "%lus", t);
}

static void print_line(struct sim_progress *p, uint64_t now_ns, uint64_t events, unsigned running, double wall,
		       bool final)
{
	double elapsed = wall - p->wall_start;
	unsigned done = p->flows_total - (running > p->flows_total ? p->flows_total : running);
	char el[32], eta[48] = "";

	fmt_duration(el, sizeof(el), elapsed);
	/* The estimate follows the flows when there are any (a run ends when
	 * they are done), else the simulated time. */
	if (!final) {
		double frac = p->flows_total ? (double)done / p->flows_total
			      : p->stop_ns ? (double)now_ns / (double)p->stop_ns : 0;
		if (frac > 0.001 && frac < 1) {
			char left[32];
			fmt_duration(left, sizeof(left), elapsed * (1 - frac) / frac);
			snprintf(eta, sizeof(eta), ", ETA %s", left);
		}
	}
	fprintf(p->out, "%s%s: %.3f ms simulated, %.2f M events/s, flows %u/%u done, %s elapsed%s%s",
		p->tty ? "\r" : "", p->label, (double)now_ns / 1e6, elapsed > 0 ? (double)events / elapsed / 1e6 : 0.0,
		done, p->flows_total, el, eta, !p->tty ? "\n" : final ? "\033[K\n" : "\033[K");
	fflush(p->out);
	p->printed = true;
}

void sim_progress_update(struct sim_progress *p, uint64_t now_ns, uint64_t events, unsigned flows_running)
{
	double w;

	p->countdown = CHECK_EVERY;
	if (!p->out)
		return;
	w = wall_now();
	if (w < p->wall_next)
		return;
	p->wall_next = w + p->interval;
	print_line(p, now_ns, events, flows_running, w, false);
}

void sim_progress_end(struct sim_progress *p, uint64_t now_ns, uint64_t events, unsigned flows_running)
{
	if (!p->out || !p->printed)
		return;
	print_line(p, now_ns, events, flows_running, wall_now(), true);
	p->out = NULL;
}
