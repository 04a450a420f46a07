/*
 * cm_check.h — the counter identities cm.h promises, as one check shared by
 * the tests (tests/cm) and the fuzz target (fuzz/fuzz_cm.c).
 */
#ifndef SOFTRNIC_TESTS_CM_CHECK_H
#define SOFTRNIC_TESTS_CM_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "cm/cm.h"

/* True if the counters add up; otherwise writes what does not into msg. */
static inline bool cm_check_counters(const struct cm_counters *c, char *msg, size_t cap)
{
	uint64_t rx_kinds = c->rx_req + c->rx_mra + c->rx_rej + c->rx_rep + c->rx_rtu + c->rx_dreq + c->rx_drep +
			    c->rx_sidr_req + c->rx_sidr_rep;
	uint64_t dups = c->rx_dup_req + c->rx_dup_mra + c->rx_dup_rej + c->rx_dup_rep + c->rx_dup_rtu +
			c->rx_dup_dreq + c->rx_dup_drep + c->rx_dup_sidr_req + c->rx_dup_sidr_rep;
	uint64_t tx_kinds = c->tx_req + c->tx_mra + c->tx_rej + c->tx_rep + c->tx_rtu + c->tx_dreq + c->tx_drep +
			    c->tx_sidr_req + c->tx_sidr_rep;
	uint64_t fates = c->rx_handled + dups + c->rx_drop_unknown_id + c->rx_drop_unexpected + c->rx_drop_timewait;

	if (c->rx_mads != rx_kinds + c->rx_drop_malformed + c->rx_drop_unsupported) {
		snprintf(msg, cap, "rx_mads %llu != kinds %llu + malformed %llu + unsupported %llu",
			 (unsigned long long)c->rx_mads, (unsigned long long)rx_kinds,
			 (unsigned long long)c->rx_drop_malformed, (unsigned long long)c->rx_drop_unsupported);
		return false;
	}
	if (rx_kinds != fates) {
		snprintf(msg, cap, "rx kinds %llu != handled %llu + dups %llu + unknown %llu + unexpected %llu + timewait %llu",
			 (unsigned long long)rx_kinds, (unsigned long long)c->rx_handled, (unsigned long long)dups,
			 (unsigned long long)c->rx_drop_unknown_id, (unsigned long long)c->rx_drop_unexpected,
			 (unsigned long long)c->rx_drop_timewait);
		return false;
	}
	if (c->tx_mads != tx_kinds) {
		snprintf(msg, cap, "tx_mads %llu != kinds %llu", (unsigned long long)c->tx_mads,
			 (unsigned long long)tx_kinds);
		return false;
	}
	if (c->ids_freed > c->ids_created || c->timewait_exited > c->timewait_entered) {
		snprintf(msg, cap, "freed %llu > created %llu or timewait exits %llu > entries %llu",
			 (unsigned long long)c->ids_freed, (unsigned long long)c->ids_created,
			 (unsigned long long)c->timewait_exited, (unsigned long long)c->timewait_entered);
		return false;
	}
	return true;
}

#endif
