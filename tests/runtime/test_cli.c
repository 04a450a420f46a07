/*
 * test_cli.c — `softrnic devices` and `softrnic stats` while this process
 * has a device open: the device, its address and GID are listed, every
 * counter is printed by name with the published value, stale files of dead
 * processes are removed (by the device's open and by the reader), and a
 * missing PID is an error.  Run as root, also the view of another user
 * (nobody, through setresuid): `softrnic stats PID` of our process is
 * "permission denied", of its own process without a device something
 * else, and `softrnic devices` does not list ours; and a stats file whose
 * pid now runs as someone else counts as stale.
 *
 * The test's processes use a runtime directory of their own
 * (SOFTRNIC_RUNTIME_DIR), so that other softrnic programs of the user do
 * not show up in what it checks.
 *
 * usage: test_cli PATH_TO_SOFTRNIC
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"

static const char *tool;
static char rundir[] = "/dev/shm/test_cli.XXXXXX";

#define NOBODY 65534

/* A file named as the stats file of pid, in our runtime directory. */
static void plant_stats_file(pid_t pid, char *path, size_t cap)
{
	snprintf(path, cap, "%s/softrnic-%d", rundir, (int)pid);
	int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	REQUIRE(fd >= 0, "create %s", path);
	close(fd);
}

/* `softrnic ARGS` run as user nobody, with its own default runtime
 * directory; its output in out, its exit status returned. */
static int run_as_nobody(const char *args, char *out, size_t cap)
{
	int p[2];
	REQUIRE(pipe(p) == 0, "pipe");
	pid_t child = fork();
	REQUIRE(child >= 0, "fork");
	if (child == 0) {
		char cmd[1024];
		dup2(p[1], 1);
		dup2(p[1], 2);
		unsetenv("SOFTRNIC_RUNTIME_DIR");
		unsetenv("XDG_RUNTIME_DIR");
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(126);
		snprintf(cmd, sizeof(cmd), "%s %s", tool, args);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	size_t n = 0;
	ssize_t k;
	while (n < cap - 1 && (k = read(p[0], out + n, cap - 1 - n)) > 0)
		n += (size_t)k;
	out[n] = 0;
	close(p[0]);
	int status;
	REQUIRE(waitpid(child, &status, 0) == child, "waitpid");
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A process of user nobody that sleeps until killed, or until the test
 * ends (a failed check exits at once). */
static pid_t start_nobody_sleeper(void)
{
	int p[2];
	pid_t parent = getpid();
	REQUIRE(pipe(p) == 0, "pipe");
	pid_t child = fork();
	REQUIRE(child >= 0, "fork");
	if (child == 0) {
		close(p[0]);
		if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(1);
		/* (after the change of uid, which clears it) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
			_exit(1);
		(void)!write(p[1], "x", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	char c;
	REQUIRE(read(p[0], &c, 1) == 1, "the nobody process did not start");
	close(p[0]);
	return child;
}

/* Run `softrnic ARGS`, capture stdout into out; returns the exit status. */
static int run(const char *args, char *out, size_t cap)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "%s %s 2>&1", tool, args);
	FILE *p = popen(cmd, "r");
	REQUIRE(p != NULL, "popen");
	size_t n = fread(out, 1, cap - 1, p);
	out[n] = 0;
	int status = pclose(p);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

int main(int argc, char **argv)
{
	static char out[65536];
	char want[256], addr[INET_ADDRSTRLEN], gid[INET6_ADDRSTRLEN];

	REQUIRE(argc == 2, "usage: %s PATH_TO_SOFTRNIC", argv[0]);
	tool = argv[1];
	unsetenv("SOFTRNIC_ADDR");
	unsetenv("SOFTRNIC_IFACE");
	REQUIRE(mkdtemp(rundir), "mkdtemp %s", rundir);
	setenv("SOFTRNIC_RUNTIME_DIR", rundir, 1);
	bool root = geteuid() == 0;

	/* Stale files: of a process that has exited, and (as root) of a pid
	 * that now runs as another user. */
	pid_t dead = fork();
	if (dead == 0)
		_exit(0);
	REQUIRE(waitpid(dead, NULL, 0) == dead, "waitpid");
	char stale[4096], reused[4096];
	plant_stats_file(dead, stale, sizeof(stale));
	pid_t sleeper = root ? start_nobody_sleeper() : 0;
	if (root)
		plant_stats_file(sleeper, reused, sizeof(reused));

	/* The device's open reclaims both. */
	struct srt_device *dev = srt_open();
	REQUIRE(dev != NULL, "srt_open: %s", strerror(errno));
	REQUIRE(access(stale, F_OK) != 0, "stale %s was not removed by the device's open", stale);
	REQUIRE(!root || access(reused, F_OK) != 0, "%s, whose pid runs as nobody, was not removed", reused);
	plant_stats_file(dead, stale, sizeof(stale));
	inet_ntop(AF_INET, &srt_gid(dev)->raw[12], addr, sizeof(addr));
	inet_ntop(AF_INET6, srt_gid(dev)->raw, gid, sizeof(gid));
	struct srt_stats_file st;
	rt_read_stats(&st, 0);

	REQUIRE(run("devices", out, sizeof(out)) == 0, "devices failed:\n%s", out);
	snprintf(want, sizeof(want), "%-8d softrnic0  %-15s 0     %-28s RoCE v2", (int)getpid(), addr, gid);
	REQUIRE(strstr(out, want), "devices output lacks '%s':\n%s", want, out);
	REQUIRE(strstr(out, "a new process would bind 127.0.0."), "no next-binding line:\n%s", out);
	REQUIRE(access(stale, F_OK) != 0, "stale %s was not removed", stale);
	snprintf(want, sizeof(want), "%-8d ", (int)dead);
	REQUIRE(!strstr(out, want), "dead process listed:\n%s", out);

	char args[64];
	snprintf(args, sizeof(args), "stats %d", (int)getpid());
	REQUIRE(run(args, out, sizeof(out)) == 0, "stats failed:\n%s", out);
	snprintf(want, sizeof(want), "softrnic0  pid %d  %s  gid %s", (int)getpid(), addr, gid);
	REQUIRE(strstr(out, want), "stats header lacks '%s':\n%s", want, out);
	/* Every counter, by name, with the value the file holds. */
	rt_read_stats(&st, 0);
#define CHECK_COUNTER(name)                                                                  \
	snprintf(want, sizeof(want), "\n  %-26s ", #name);                                   \
	REQUIRE(strstr(out, want), "counter %s missing:\n%s", #name, out);
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
	REQUIRE(lines == counters + 1, "%d lines for %d counters", lines, counters);

	REQUIRE(run("stats -w -n 2", out, sizeof(out)) == 0, "stats -w failed:\n%s", out);
	REQUIRE(strstr(out, "tx_packets") && strstr(strstr(out, "tx_packets") + 1, "tx_packets"),
	      "watch mode should print twice:\n%s", out);

	/* --qp: one line per QP, with its state and the pacer's limit. */
	srt_lock(dev);
	struct rnic *r = srt_rnic(dev);
	struct rnic_pd *pd = rnic_pd_alloc(r);
	struct rnic_cq *cq = rnic_cq_create(r, 4, NULL);
	struct ibv_qp_init_attr init = { .qp_type = IBV_QPT_RC,
					 .cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp *qp = pd && cq ? rnic_qp_create(pd, cq, cq, &init, NULL) : NULL;
	REQUIRE(qp && rnic_qp_set_rate_limit(qp, 5000, 0, 0, 0) == 0, "qp with a rate limit");
	uint32_t qpn = rnic_qp_num(qp);
	srt_unlock(dev);
	rt_read_stats(&st, st.updated_ns);      /* a refresh that includes the QP */
	rt_read_stats(&st, st.updated_ns);
	snprintf(args, sizeof(args), "stats --qp %d", (int)getpid());
	REQUIRE(run(args, out, sizeof(out)) == 0, "stats --qp failed:\n%s", out);
	REQUIRE(strstr(out, "1 QPs") && strstr(out, "QPN") && strstr(out, "CNP_RX"), "stats --qp header:\n%s", out);
	snprintf(want, sizeof(want), "0x%06x RC   RESET", qpn);
	REQUIRE(strstr(out, want), "stats --qp lacks '%s':\n%s", want, out);
	REQUIRE(strstr(out, "5.0M"), "stats --qp shows no 5 Mb/s limit:\n%s", out);
	srt_lock(dev);
	rnic_qp_destroy(qp);
	rnic_cq_destroy(cq);
	rnic_pd_free(pd);
	srt_unlock(dev);

	REQUIRE(run("stats 999999999", out, sizeof(out)) == 1, "stats of a missing pid should fail");
	REQUIRE(strstr(out, "no softrnic device in process 999999999"), "message:\n%s", out);
	REQUIRE(run("stats bogus", out, sizeof(out)) == 2, "bad argument should be a usage error");
	snprintf(args, sizeof(args), "stats %d", (int)dead);
	REQUIRE(run(args, out, sizeof(out)) == 1 && strstr(out, "no such process"), "stats of a dead pid:\n%s", out);

	/* Another user sees none of it (where user nobody can run the tool:
	 * not in a clone only its owner may enter). */
	bool nobody_runs = root && run_as_nobody("--help", out, sizeof(out)) == 0;
	if (root && !nobody_runs)
		printf("test_cli: user nobody cannot run %s (the folders' modes): the checks as nobody skipped\n", tool);
	if (nobody_runs) {
		snprintf(args, sizeof(args), "stats %d", (int)getpid());
		REQUIRE(run_as_nobody(args, out, sizeof(out)) == 1, "nobody's stats of our pid did not fail:\n%s", out);
		snprintf(want, sizeof(want), "softrnic: stats of pid %d: permission denied\n", (int)getpid());
		REQUIRE(!strcmp(out, want), "nobody's stats of our pid: '%s', not '%s'", out, want);
		snprintf(args, sizeof(args), "stats --qp %d", (int)getpid());
		REQUIRE(run_as_nobody(args, out, sizeof(out)) == 1 && !strcmp(out, want), "nobody's stats --qp:\n%s", out);
		snprintf(args, sizeof(args), "stats %d", (int)sleeper);
		REQUIRE(run_as_nobody(args, out, sizeof(out)) == 1 && strstr(out, "it has none open") &&
		      !strstr(out, "permission"), "nobody's stats of its own process without a device:\n%s", out);
		REQUIRE(run_as_nobody("devices", out, sizeof(out)) == 0, "nobody's devices failed:\n%s", out);
		snprintf(want, sizeof(want), "%-8d softrnic0", (int)getpid());
		REQUIRE(!strstr(out, want) && strstr(out, "(no softrnic devices running)"), "nobody sees our device:\n%s",
		      out);
		REQUIRE(run_as_nobody("stats", out, sizeof(out)) == 0 && !strstr(out, "tx_packets"),
		      "nobody's stats shows counters:\n%s", out);
	}
	if (root) {
		kill(sleeper, SIGKILL);
		waitpid(sleeper, NULL, 0);
	}

	srt_close(dev);
	REQUIRE(run("devices", out, sizeof(out)) == 0, "devices failed");
	snprintf(want, sizeof(want), "%-8d softrnic0", (int)getpid());
	REQUIRE(!strstr(out, want), "closed device still listed:\n%s", out);
	REQUIRE(rmdir(rundir) == 0, "%s not empty after the close: %s", rundir, strerror(errno));
	printf("cli: ok\n");
	return 0;
}
