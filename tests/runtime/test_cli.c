/*
 * test_cli.c — `softrnic devices` and `softrnic stats` while this process
 * has a device open: the device, its address and GID are listed, every
 * counter is printed by name with the published value, stale files of dead
 * processes are removed, and a missing PID is an error.
 *
 * usage: test_cli PATH_TO_SOFTRNIC
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"

static const char *tool;

/* Run `softrnic ARGS`, capture stdout into out; returns the exit status. */
static int run(const char *args, char *out, size_t cap)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tool, args);
	FILE *p = popen(cmd, "r");
	CHECK(p != NULL, "popen");
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = 0;
	int status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	static char out[65536];
	char want[256], addr[INET_ADDRSTRLEN], gid[INET6_ADDRSTRLEN];

	CHECK(argc == 2, "usage: %s PATH_TO_SOFTRNIC", argv[0]);
	tool = argv[1];
	unsetenv("SOFTRNIC_ADDR");
	unsetenv("SOFTRNIC_IFACE");

	/* A stale file: a process that has exited. */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	CHECK(waitpid(dead, NULL, 0) == dead, "waitpid");
	char stale[64];
	snprintf(stale, sizeof(stale), "/dev/shm/softrnic-%d", (int)dead);
	int fd = open(stale, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK(fd >= 0, "create %s", stale);
	close(fd);

	struct srt_device *dev = srt_open();
	CHECK(dev != NULL, "srt_open: %s", strerror(errno));
	inet_ntop(AF_INET, &srt_gid(dev)->raw[12], addr, sizeof(addr));
	inet_ntop(AF_INET6, srt_gid(dev)->raw, gid, sizeof(gid));
	struct srt_stats_file st;
	rt_read_stats(&st, 0);

	CHECK(run("devices", out, sizeof(out)) == 0, "devices failed:\n%s", out);
	snprintf(want, sizeof(want), "%-8d softrnic0  %-15s 0     %-28s RoCE v2", (int)getpid(), addr, gid);
	CHECK(strstr(out, want), "devices output lacks '%s':\n%s", want, out);
	CHECK(strstr(out, "a new process would bind 127.0.0."), "no next-binding line:\n%s", out);
	CHECK(access(stale, F_OK) != 0, "stale %s was not removed", stale);
	snprintf(want, sizeof(want), "%-8d ", (int)dead);
	CHECK(!strstr(out, want), "dead process listed:\n%s", out);

	char args[64];
	snprintf(args, sizeof(args), "stats %d", (int)getpid());
	CHECK(run(args, out, sizeof(out)) == 0, "stats failed:\n%s", out);
	snprintf(want, sizeof(want), "softrnic0  pid %d  %s  gid %s", (int)getpid(), addr, gid);
	CHECK(strstr(out, want), "stats header lacks '%s':\n%s", want, out);
	/* Every counter, by name, with the value the file holds. */
	rt_read_stats(&st, 0);
#define CHECK_COUNTER(name)                                                                  \
	snprintf(want, sizeof(want), "\n  %-26s ", #name);                                   \
	CHECK(strstr(out, want), "counter %s missing:\n%s", #name, out);
	RNIC_COUNTER_LIST(CHECK_COUNTER)
	/* and the runtime's own (faults, capture: runtime.h), 0 here */
	SRT_RUNTIME_COUNTER_LIST(CHECK_COUNTER)
#undef CHECK_COUNTER
	int lines = 0;
	for (char *p = out; (p = strchr(p, '\n')) != NULL; p++)
		lines++;
	int counters = 0;
#define COUNT_ONE(name) counters++;
	RNIC_COUNTER_LIST(COUNT_ONE)
	SRT_RUNTIME_COUNTER_LIST(COUNT_ONE)
#undef COUNT_ONE
	CHECK(lines == counters + 1, "%d lines for %d counters", lines, counters);

	CHECK(run("stats -w -n 2", out, sizeof(out)) == 0, "stats -w failed:\n%s", out);
	CHECK(strstr(out, "tx_packets") && strstr(strstr(out, "tx_packets") + 1, "tx_packets"),
	      "watch mode should print twice:\n%s", out);

	/* --qp: one line per QP, with its state and the pacer's limit. */
	srt_lock(dev);
	struct rnic *r = srt_rnic(dev);
	struct rnic_pd *pd = rnic_pd_alloc(r);
	struct rnic_cq *cq = rnic_cq_create(r, 4, NULL);
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp *qp = pd && cq ? rnic_qp_create(pd, cq, cq, &init, NULL) : NULL;
	CHECK(qp && rnic_qp_set_rate_limit(qp, 5000, 0, 0, 0) == 0, "qp with a rate limit");
	uint32_t qpn = rnic_qp_num(qp);
	srt_unlock(dev);
	rt_read_stats(&st, st.updated_ns);      /* a refresh that includes the QP */
	rt_read_stats(&st, st.updated_ns);
	snprintf(args, sizeof(args), "stats --qp %d", (int)getpid());
	CHECK(run(args, out, sizeof(out)) == 0, "stats --qp failed:\n%s", out);
	CHECK(strstr(out, "1 QPs") && strstr(out, "QPN") && strstr(out, "CNP_RX"), "stats --qp header:\n%s", out);
	snprintf(want, sizeof(want), "0x%06x RC   RESET", qpn);
	CHECK(strstr(out, want), "stats --qp lacks '%s':\n%s", want, out);
	CHECK(strstr(out, "5.0M"), "stats --qp shows no 5 Mb/s limit:\n%s", out);
	srt_lock(dev);
	rnic_qp_destroy(qp);
	rnic_cq_destroy(cq);
	rnic_pd_free(pd);
	srt_unlock(dev);

	CHECK(run("stats 999999999", out, sizeof(out)) == 1, "stats of a missing pid should fail");
	CHECK(strstr(out, "no softrnic device in process 999999999"), "message:\n%s", out);
	CHECK(run("stats bogus", out, sizeof(out)) == 2, "bad argument should be a usage error");

	srt_close(dev);
	CHECK(run("devices", out, sizeof(out)) == 0, "devices failed");
	snprintf(want, sizeof(want), "%-8d softrnic0", (int)getpid());
	CHECK(!strstr(out, want), "closed device still listed:\n%s", out);
	printf("cli: ok\n");
	return 0;
}
