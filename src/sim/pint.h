/*
 * pint.h — HPCC-PINT's one-field INT in the simulated fabric (CC_MODE 10;
 * pint.c).  Where HPCC's switches append a record per hop (switch.c), PINT's
 * keep a utilisation U per egress port and raise a single field of each
 * data packet to the largest U on its path, log-encoded so that it fits a
 * few bits; the receiver echoes the field and the sender's rate law is
 * rnic/hpcc_cc.c's (hpcc_params.pint).  As HPCC's simulator does it
 * (switch-node.cc SwitchNotifyDequeue, pint.cc), with one difference said
 * plainly: its switch computes U through base-2 logarithm tables with a
 * random rounding of the operands (what switch hardware could do); we
 * compute the same formula exactly:
 *
 *   dt   = min(now − the port's previous packet's departure, T)
 *   U'   = U·(T − dt)/T  +  (qlen·dt/T + previous packet's bytes)/(B·T)
 *          (B the link's bytes per ns, T the fabric's largest base RTT;
 *           the qlen term only from 256 bytes, as HPCC's)
 *
 * The encoding: u' = ceil(U·512) (at least 1), the field = log_b(u')
 * rounded up or down at random in proportion to where u' lies between the
 * two powers (b = PINT_LOG_BASE), so it is unbiased; decoded b^field/512.
 */
#ifndef SOFTRNIC_SIM_PINT_H
#define SOFTRNIC_SIM_PINT_H

#include <stdint.h>

struct sim_pint {
	double log_base, log_factor;    /* PINT_LOG_BASE, 1/ln(base) */
	double T_ns;                    /* the switches' horizon */
};

/* One egress port's state. */
struct sim_pint_port {
	double u;
	uint64_t last_ts;               /* the previous packet's departure */
	uint32_t last_bytes;            /* and its wire bytes (0: none yet) */
};

void sim_pint_init(struct sim_pint *p, double log_base, uint64_t T_ns);
/* U' of the port when a data packet leaves it now with qlen bytes still
 * queued (the formula above); the port keeps it. */
double sim_pint_port_u(const struct sim_pint *p, struct sim_pint_port *s, uint64_t now, uint64_t qlen,
		       uint64_t rate_bps);
/* Every packet that leaves the port (data or not), after the above. */
void sim_pint_port_sent(struct sim_pint_port *s, uint64_t now, uint32_t bytes);
/* The field for utilisation u; uniform01 in [0, 1) draws the rounding. */
uint16_t sim_pint_encode(const struct sim_pint *p, double u, double uniform01);
/* The field's utilisation in 1/2^20 (at least 1). */
uint32_t sim_pint_decode_q20(const struct sim_pint *p, uint16_t field);

#endif
