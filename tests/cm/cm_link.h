/*
 * cm_link.h — a seeded, deterministic MAD "network" between N cm instances,
 * for the tests in tests/cm (the CM's counterpart of src/ports/pair).
 *
 * It runs on the simulator's discrete-event engine (sim/engine.h), as
 * ports/pair does: the link owns N cms and is every cm's cm_io, and a MAD
 * one cm sends becomes one engine event, delivered in the engine's
 * (time, sequence) order, after the fault knobs had their say: loss (per
 * message kind), duplication, reordering (extra delay that lets later
 * MADs pass), base delay + jitter (a link stays FIFO under jitter), and
 * an optional tap that sees every MAD and may drop it.  The engine's
 * clock is the link's: link_run_until() moves it from event to event —
 * the next delivery, the earliest cm timer or a test alarm — so seconds
 * of CM timeouts take microseconds, and nothing depends on the host.
 *
 * All randomness comes from one seeded PRNG; a run replays bit for bit
 * from its seed.  A trace hash (FNV-1a) over every delivered MAD, every
 * event and every state transition, with their times, lets a test assert
 * that two runs were identical.
 *
 * Events are copied (with their private data) into a per-node queue: the
 * cm forbids calling back into it from io->event, so tests act on events
 * between steps (link_pop_event), e.g. from the link_run_until predicate.
 */
#ifndef SOFTRNIC_TESTS_CM_LINK_H
#define SOFTRNIC_TESTS_CM_LINK_H

#include <stdbool.h>
#include <stdint.h>

#include "cm/cm.h"

#define LINK_MAX_NODES 8u

/* Message kinds, for per-kind loss (index = attr - 0x10). */
enum link_kind {
	LK_REQ, LK_MRA, LK_REJ, LK_REP, LK_RTU, LK_DREQ, LK_DREP, LK_SIDR_REQ, LK_SIDR_REP, LK_NKINDS
};

struct link_faults {
	double loss[LK_NKINDS];         /* drop, per message kind             */
	double dup;                     /* deliver a second copy              */
	double reorder;                 /* hold back by (0, reorder_ns]       */
	uint64_t reorder_ns;
	uint64_t delay_ns;              /* base one-way delay                 */
	uint64_t jitter_ns;             /* plus [0, jitter_ns] (FIFO kept)    */
};

struct link_stats {
	uint64_t sent, delivered, lost, tapped, duplicated, reordered, no_route;
};

/* A copied event. */
struct link_event {
	unsigned node;
	uint64_t time;
	struct cm_event ev;             /* pointers re-aimed at the copies    */
	uint32_t local_comm_id;         /* of ev.id, read during the callback */
	uint8_t priv[256];
	uint8_t ari[WIRE_CM_REJ_ARI_LEN];
	uint8_t info[WIRE_CM_SIDR_REP_INFO_LEN];
};

/* The tap sees each MAD when it is sent; return false to drop it. */
typedef bool (*link_tap_fn)(void *arg, unsigned from, unsigned to, uint64_t now, uint8_t mad[256]);
/* Called for every event, during io->event (must not call the cm). */
typedef void (*link_event_fn)(void *arg, const struct link_event *ev);

/* n cms (2..LINK_MAX_NODES).  Node i: GID ::ffff:10.0.1.(i+1), CA GUID
 * 0x1000 + i, cfg (cm_config_default if NULL) with seed mixed with i.
 * Links start fault-free, 1 us delay. */
struct link *link_create(uint64_t seed, unsigned n, const struct cm_config *cfg);
void link_destroy(struct link *l);
struct cm *link_cm(struct link *l, unsigned node);
const uint8_t *link_gid(const struct link *l, unsigned node);
void link_set_faults(struct link *l, const struct link_faults *f);   /* all directions */
void link_set_faults_dir(struct link *l, unsigned from, unsigned to, const struct link_faults *f);
void link_set_tap(struct link *l, link_tap_fn fn, void *arg);
void link_set_event_hook(struct link *l, link_event_fn fn, void *arg);
/* Hash the cm state transitions into the trace too (default on). */
void link_trace_transitions(struct link *l, bool on);
/* Print every transition and delivery to stderr (debugging). */
void link_verbose(struct link *l, bool on);

uint64_t link_now(const struct link *l);
uint64_t link_random(struct link *l);
uint64_t link_random_below(struct link *l, uint64_t n);
double link_random_unit(struct link *l);

/* Make the clock stop at `t` (the predicate then runs at that time; a
 * time already past stops it now, after what is due now). */
void link_alarm(struct link *l, uint64_t t);

enum link_run { LINK_DONE, LINK_TIMEOUT, LINK_IDLE };
/* Step until pred(arg) is true (checked before every step), max_ns of
 * simulated time pass, or nothing is left to happen. */
enum link_run link_run_until(struct link *l, bool (*pred)(void *arg), void *arg, uint64_t max_ns);
/* Process everything up to now + ns, and set the clock there. */
void link_run_for(struct link *l, uint64_t ns);

/* The events of a node, oldest first. */
bool link_pop_event(struct link *l, unsigned node, struct link_event *out);
unsigned link_pending_events(const struct link *l, unsigned node);

/* Deliver a MAD to a node now, as if from node `from` (bypasses faults). */
void link_inject(struct link *l, unsigned from, unsigned to, const uint8_t *mad, size_t len);

uint64_t link_trace_hash(const struct link *l);
const struct link_stats *link_stats(const struct link *l);
/* Engine events waiting: MADs in flight and alarms not yet reached. */
size_t link_in_flight(const struct link *l);

/* The identities of cm.h's counter comment; returns false and prints what
 * failed for node `node`. */
bool link_counters_consistent(struct link *l, unsigned node);

#endif
