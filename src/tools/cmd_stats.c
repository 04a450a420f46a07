/*
 * cmd_stats.c — `softrnic devices` and `softrnic stats`: what the running
 * softrnic devices on this machine are and what their counters say.
 *
 * Every process with an open device publishes softrnic-<pid> in its
 * user's runtime directory (runtime/stats_file.h, runtime_dir.h); these
 * commands read those files — the caller's own, and for root every
 * user's found at the default places — and remove the caller's whose
 * process has gone.  Another user's process is not shown: its QPNs and
 * PSNs are enough to forge its packets.  Like `ibv_devices` +
 * `ethtool -S`.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/runtime_dir.h"
#include "runtime/stats_file.h"
#include "runtime/udp_port.h"
#include "tools/commands.h"

static void format_gid(const uint8_t gid[16], char *out, size_t cap)
{
	if (!inet_ntop(AF_INET6, gid, out, (socklen_t)cap))
		snprintf(out, cap, "?");
}

/* The IPv4 address inside an IPv4-mapped GID, or "-". */
static void format_addr(const uint8_t gid[16], char *out, size_t cap)
{
	struct rnic_gid g;
	struct in_addr a;

	memcpy(g.raw, gid, 16);
	if (!srt_gid_to_ipv4(&g, &a) || !inet_ntop(AF_INET, &a, out, (socklen_t)cap))
		snprintf(out, cap, "-");
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- softrnic devices ------------------------------------------------------ */

static void print_device_row(void *arg, const struct srt_stats_file *s)
{
	char gid[INET6_ADDRSTRLEN], addr[INET_ADDRSTRLEN];
	(void)arg;

	format_gid(s->gid, gid, sizeof(gid));
	format_addr(s->gid, addr, sizeof(addr));
	printf("%-8d %-10s %-15s %-5d %-28s %s\n", (int)s->pid, s->name, addr, 0, gid, "RoCE v2");
}

/* Say which address a new process would bind, by binding it and letting
 * go at once (honours SOFTRNIC_ADDR / SOFTRNIC_IFACE like the runtime). */
static void print_next_binding(void)
{
	struct srt_udp u;
	char err[256], addr[INET6_ADDRSTRLEN + 2];
	static const int mtu_bytes[] = { 0, 256, 512, 1024, 2048, 4096 };

	int e = srt_udp_open(&u, err, sizeof(err));
	if (e) {
		printf("a new process could not bind: %s\n", err);
		return;
	}
	if (u.v6) {
		addr[0] = '[';
		inet_ntop(AF_INET6, u.gid.raw, addr + 1, sizeof(addr) - 2);
		strcat(addr, "]");
	} else {
		inet_ntop(AF_INET, &u.addr, addr, sizeof(addr));
	}
	printf("a new process would bind %s:%u (%s%s%s, active MTU %d)\n", addr, WIRE_ROCEV2_UDP_PORT,
	       u.source == SRT_ADDR_LOOPBACK ? "first free loopback address"
	       : u.source == SRT_ADDR_ENV_ADDR ? "SOFTRNIC_ADDR" : "SOFTRNIC_IFACE",
	       u.ifname[0] ? ", interface " : "", u.ifname, mtu_bytes[u.active_mtu]);
	srt_udp_close(&u);
}

/* Where this user's files are (runtime_dir.h). */
static void print_runtime_dir(void)
{
	int fd = srt_runtime_dir_open(false);
	const char *path = srt_runtime_dir_path();

	if (fd < 0) {
		printf("runtime directory %s (%s)\n", path, errno == ENOENT ? "not made yet" : "refused");
		return;
	}
	printf("runtime directory %s%s\n", path,
	       srt_runtime_dir_on_tmpfs(fd) ? "" : " (not a memory file system: the rings' pages are written back to it)");
	close(fd);
}

int cmd_devices(const struct cli_args *a)
{
	(void)a;
	printf("%-8s %-10s %-15s %-5s %-28s %s\n", "PID", "DEVICE", "ADDRESS", "GID#", "GID", "TYPE");
	int n = srt_stats_foreach(print_device_row, NULL);
	if (n == 0)
		printf("(no softrnic devices running)\n");
	print_next_binding();
	print_runtime_dir();
	return 0;
}

/* ---- softrnic stats -------------------------------------------------------- */

static void print_counters(void *arg, const struct srt_stats_file *s)
{
	char gid[INET6_ADDRSTRLEN], addr[INET_ADDRSTRLEN];
	uint64_t now = monotonic_ns();
	(void)arg;

	format_gid(s->gid, gid, sizeof(gid));
	format_addr(s->gid, addr, sizeof(addr));
	printf("%s  pid %d  %s  gid %s", s->name, (int)s->pid, addr, gid);
	if (s->updated_ns && now >= s->updated_ns)
		printf("  (updated %.2f s ago)", (double)(now - s->updated_ns) / 1e9);
	printf("\n");
#define PRINT_COUNTER(name) printf("  %-26s %llu\n", #name, (unsigned long long)s->counters.name);
	RNIC_COUNTER_LIST(PRINT_COUNTER)
#undef PRINT_COUNTER
	/* The runtime's own: SOFTRNIC_FAULTS and SOFTRNIC_PCAP. */
#define PRINT_RUNTIME_COUNTER(name) printf("  %-26s %llu\n", #name, (unsigned long long)s->runtime.name);
	SRT_RUNTIME_COUNTER_LIST(PRINT_RUNTIME_COUNTER)
#undef PRINT_RUNTIME_COUNTER
	for (uint32_t i = 0; i < s->n_agent && i < SRT_AGENT_COUNTERS; i++)
		printf("  %-26.*s %llu\n", (int)sizeof(s->agent[i].name), s->agent[i].name,
		       (unsigned long long)s->agent[i].value);
}

/* ---- softrnic stats --qp: one line per QP ----------------------------------- */

static const char *qp_type_name(enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? "RC" : t == IBV_QPT_UC ? "UC" : t == IBV_QPT_UD ? "UD" : "?";
}

static const char *qp_state_name(enum ibv_qp_state st)
{
	static const char *const names[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR" };

	return (unsigned)st < sizeof(names) / sizeof(names[0]) ? names[st] : "?";
}

/* A rate in bits/s as "12.5G" / "850M" / "-" (0: no pacing). */
static void format_rate(uint64_t bps, char *out, size_t cap)
{
	if (!bps)
		snprintf(out, cap, "-");
	else if (bps >= 1000000000ull)
		snprintf(out, cap, "%.2fG", (double)bps / 1e9);
	else
		snprintf(out, cap, "%.1fM", (double)bps / 1e6);
}

static void print_qps(void *arg, const struct srt_stats_file *s)
{
	char addr[INET_ADDRSTRLEN];
	(void)arg;

	format_addr(s->gid, addr, sizeof(addr));
	printf("%s  pid %d  %s  %u QPs\n", s->name, (int)s->pid, addr, s->qp_total);
	printf("  %-8s %-4s %-5s %-8s %-8s %-8s %-8s %5s %6s %8s %8s %5s %7s %7s %7s %6s %10s %10s\n", "QPN", "TYPE",
	       "STATE", "DEST", "SQ_PSN", "UNACKED", "RQ_PSN", "OUTST", "RETX", "RATE", "LIMIT", "ALPHA", "CE",
	       "CNP_TX", "CNP_RX", "CUTS", "TX_PKTS", "RX_PKTS");
	for (uint32_t i = 0; i < s->n_qp && i < SRT_STATS_QPS; i++) {
		const struct rnic_qp_info *q = &s->qps[i];
		char rate[16], limit[16];

		format_rate(q->rate_bps, rate, sizeof(rate));
		format_rate(q->rate_limit_bps, limit, sizeof(limit));
		printf("  0x%06x %-4s %-5s 0x%06x %-8u %-8u %-8u %5u %6llu %8s %8s %5u %7llu %7llu %7llu %6llu %10llu %10llu\n",
		       q->qpn, qp_type_name(q->type), qp_state_name(q->state), q->dest_qpn, q->sq_psn, q->unacked_psn,
		       q->rq_psn, q->outstanding, (unsigned long long)q->retransmits, rate, limit, q->alpha,
		       (unsigned long long)q->ce_received, (unsigned long long)q->cnp_sent,
		       (unsigned long long)q->cnp_received, (unsigned long long)q->rate_decreases,
		       (unsigned long long)q->tx_packets, (unsigned long long)q->rx_packets);
	}
	if (s->qp_total > s->n_qp)
		printf("  (%u more not listed)\n", s->qp_total - s->n_qp);
}

static int stats_once(pid_t pid, bool qps)
{
	void (*show)(void *, const struct srt_stats_file *) = qps ? print_qps : print_counters;

	if (pid == 0) {
		if (srt_stats_foreach(show, NULL) == 0)
			printf("(no softrnic devices running)\n");
		return 0;
	}
	struct srt_stats_file s;
	int e = srt_stats_read(pid, &s);
	if (e == EACCES) {
		fprintf(stderr, "softrnic: stats of pid %d: permission denied\n", (int)pid);
		return 1;
	}
	if (e) {
		fprintf(stderr, "softrnic stats: no softrnic device in process %d (%s)\n", (int)pid,
			e == ESRCH ? "no such process" : e == ENOENT ? "it has none open"
			: e == EINVAL ? "its stats file is not one" : strerror(e));
		return 1;
	}
	show(NULL, &s);
	return 0;
}

int cmd_stats(const struct cli_args *a)
{
	static const struct cli_opt pid_spec = { "PID", 0, CLI_UINT, NULL, NULL, 1, 0x7fffffff, 0, 0, "a process id",
						 0, 0 };
	bool watch = cli_flag(a, "--watch"), qps = cli_flag(a, "--qp");
	long rounds = cli_get(a, "--count") ? (long)cli_uint(a, "--count", 0) : -1;
	struct cli_val v;
	pid_t pid = 0;

	if (a->argc) {
		if (!cli_check(a, &pid_spec, a->argv[0], &v))
			return 2;
		pid = (pid_t)v.u;
	}
	if (!watch)
		return stats_once(pid, qps);
	for (long round = 0; rounds < 0 || round < rounds; round++) {
		if (round)
			sleep(1);
		int rc = stats_once(pid, qps);
		if (rc)
			return rc;
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
