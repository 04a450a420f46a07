/*
 * faults.h — fault injection on the real receive path: SOFTRNIC_FAULTS=
 * "loss=0.01,dup=0.001,reorder=0.01,delay=50us,corrupt=0.0001,seed=7"
 * makes the process's own device lose, duplicate, reorder, delay and
 * corrupt the RoCEv2 packets it receives, before the ICRC check and the
 * transport see them, so unmodified programs can be run over a bad
 * network on one machine (docs/capture_and_faults.md).
 *
 * Where it sits: receive_path.c hands every packet srt_udp_recv returned to
 * srt_faults_receive instead of delivering it; the faults deliver what
 * survives through the callback given at creation (the runtime's ICRC
 * check, capture and rnic_receive), at once or later: packets held back
 * (reorder, delay) leave through srt_faults_release, which the runtime
 * calls from its timers (srt_faults_deadline is one of the device's
 * deadlines, so the progress thread wakes for them).  Everything runs
 * under the device lock; the faults have no lock of their own.
 *
 * Decisions come from the seeded PRNG (base/prng.h), drawn per packet in
 * a fixed order, so one seed gives one sequence of decisions for one
 * sequence of received packets.
 */
#ifndef SOFTRNIC_RUNTIME_FAULTS_H
#define SOFTRNIC_RUNTIME_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/udp_port.h"

/* What SOFTRNIC_FAULTS asks for.  Probabilities per received packet,
 * 0..1; every key optional (0: off). */
struct srt_faults_config {
	double loss;            /* dropped                                    */
	double dup;             /* delivered twice                            */
	double reorder;         /* held back, delivered after the next packet
	                           (or after SRT_FAULTS_REORDER_HOLD_NS)      */
	double corrupt;         /* one bit flipped (the ICRC check drops it)  */
	uint64_t delay_ns;      /* every packet held this long (a FIFO)       */
	uint64_t seed;
	bool seeded;            /* seed= was given                            */
};

/* A packet held back for reordering leaves after the next packet, or
 * after this long if none comes (a ping-pong's last packet would
 * otherwise wait for the peer's retransmission). */
#define SRT_FAULTS_REORDER_HOLD_NS (100ull * 1000)
/* Longest delay= accepted. */
#define SRT_FAULTS_MAX_DELAY_NS (1000ull * 1000 * 1000)
/* Packets the delay line holds at most; when it is full its oldest
 * packet leaves early (delayed less, never lost). */
#define SRT_FAULTS_DELAY_SLOTS 1024u

/* Parse a SOFTRNIC_FAULTS string into *cfg: comma-separated key=value,
 * keys loss, dup, reorder, corrupt (a number 0..1), delay (a number with
 * a unit ns, us or ms, at most 1 s), seed (an unsigned integer, decimal
 * or 0x hex), each at most once; "" or only spaces: nothing.  Returns 0,
 * or EINVAL with a one-line explanation in err. */
int srt_faults_parse(const char *spec, struct srt_faults_config *cfg, char *err, size_t errlen);
/* Does cfg inject anything? */
bool srt_faults_config_active(const struct srt_faults_config *cfg);
/* cfg as a SOFTRNIC_FAULTS string (only the keys that are on, and the
 * seed), for messages. */
void srt_faults_format(const struct srt_faults_config *cfg, char *out, size_t cap);

/* Counters of injected faults (published as faults_* by the runtime).
 * delay: packets that waited in the delay line; reorder: packets held
 * back; dup: extra copies delivered; corrupt: bits flipped. */
struct srt_faults_counters {
	uint64_t loss, dup, reorder, delay, corrupt;
};

/* Called for each packet the faults let through: p and p->data are
 * valid only during the call (may be the caller's batch or the faults'
 * own copy). */
typedef void (*srt_faults_deliver_fn)(void *ctx, const struct srt_rx_pkt *p, uint64_t now);

struct srt_faults;
/* NULL with errno ENOMEM.  cfg->seed is used as given (the caller picks
 * one when cfg->seeded is false). */
struct srt_faults *srt_faults_create(const struct srt_faults_config *cfg, srt_faults_deliver_fn deliver,
				     void *ctx);
/* Packets still held are discarded. */
void srt_faults_destroy(struct srt_faults *f);

/* One received packet.  p->data may be modified (corrupt flips a bit in
 * place).  Delivers what is due before it first. */
void srt_faults_receive(struct srt_faults *f, struct srt_rx_pkt *p, uint64_t now);
/* When the next held packet is due (UINT64_MAX: none held). */
uint64_t srt_faults_deadline(const struct srt_faults *f);
/* Deliver the held packets that are due at `now`. */
void srt_faults_release(struct srt_faults *f, uint64_t now);
const struct srt_faults_counters *srt_faults_counters(const struct srt_faults *f);

#endif
