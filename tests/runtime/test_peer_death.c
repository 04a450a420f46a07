/*
 * test_peer_death.c — a peer SIGKILLed in the middle of traffic.  Two
 * processes connect an RC QP; the survivor streams RDMA WRITEs and, after
 * some completion, kills the other.  Each seed (the arguments; 1-6 in
 * CTest) draws the moment of the kill (after 1-1500 completions), the
 * message size (256 B-32 KiB) and the WRITEs in flight (1, 8 or 32), and
 * is printed, so a failure replays with `test_peer_death SEED`.  Then every
 * WQE still posted must complete: the one in progress with "transport
 * retry counter exceeded" (IBTA 9.7.5.1.3, retries exhausted), the rest
 * flushed (IBV_WC_WR_FLUSH_ERR) — no completion lost, none twice — the QP
 * must be in ERR, and the QP, the endpoint and the device must close
 * cleanly.  Run over whichever path the environment picks: the host-local
 * rings (default) and UDP (SOFTRNIC_LOCAL=0) are separate CTest entries.
 */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"

#define BUF_LEN (1u << 20)
#define MAX_MSG 32768u
#define TOTAL 2000u

/* What one seed draws. */
struct plan {
	unsigned kill_after, msg, depth;
};

static struct plan draw(unsigned long seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	static const unsigned msgs[] = { 256, 4096, 16384, MAX_MSG }, depths[] = { 1, 8, 32 };

	x ^= x >> 31;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	return (struct plan){ .kill_after = 1 + (unsigned)(x % 1500), .msg = msgs[(x >> 20) % 4],
			      .depth = depths[(x >> 30) % 3] };
}

static int victim(int fd)
{
	struct srt_device *dev = srt_open();
	struct rt_endpoint ep;
	struct rt_qp_info mine, peer;

	REQUIRE(dev != NULL, "victim: srt_open");
	rt_endpoint_init(&ep, dev, BUF_LEN);
	struct rnic_qp *qp = rt_qp_exchange(&ep, fd, 0x100, &mine, &peer);
	REQUIRE(rt_qp_connect(&ep, qp, 0x100, &peer, srt_active_mtu(dev)) == 0, "victim: connect");
	rt_barrier(fd);
	for (;;)
		pause();        /* the progress thread answers until SIGKILL */
}

static void run_one(unsigned long seed)
{
	struct plan pl = draw(seed);
	int sv[2];

	fprintf(stderr, "seed %lu: kill after %u completions, %u-byte WRITEs, %u in flight\n", seed, pl.kill_after,
		pl.msg, pl.depth);
	REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	fflush(stderr);
	pid_t child = fork();
	REQUIRE(child >= 0, "fork");
	if (child == 0) {
		close(sv[0]);
		_exit(victim(sv[1]));
	}
	close(sv[1]);

	struct srt_device *dev = srt_open();
	struct rt_endpoint ep;
	struct rt_qp_info mine, peer;

	REQUIRE(dev != NULL, "survivor: srt_open");
	rt_endpoint_init(&ep, dev, BUF_LEN);
	struct rnic_qp *qp = rt_qp_exchange(&ep, sv[0], 0x200, &mine, &peer);
	/* ACK timeout 4.096 us * 2^10 = 4 ms, 7 retries: retry exceeded
	 * some tens of milliseconds after the peer dies. */
	REQUIRE(rt_qp_connect_timeout(&ep, qp, 0x200, &peer, srt_active_mtu(dev), 10) == 0, "survivor: connect");
	rt_barrier(sv[0]);

	unsigned posted = 0, ok = 0, retry_exc = 0, flushed = 0, other = 0;
	bool killed = false;
	uint8_t seen[TOTAL] = { 0 };

	while (ok + retry_exc + flushed + other < TOTAL) {
		while (posted < TOTAL && posted - (ok + retry_exc + flushed + other) < pl.depth) {
			int e = rt_post_send(&ep, qp, IBV_WR_RDMA_WRITE, (posted % 32) * pl.msg, pl.msg,
					     peer.addr + (posted % 32) * pl.msg, peer.rkey, posted);
			if (e)          /* a QP in ERR may refuse new work: count what was posted */
				break;
			posted++;
		}
		struct ibv_wc wc;
		REQUIRE(rt_wait_wc(&ep, &wc, 5000), "survivor: no completion for 5 s (posted %u, completed %u)", posted,
		      ok + retry_exc + flushed + other);
		REQUIRE(wc.wr_id < TOTAL && !seen[wc.wr_id], "survivor: completion for wr_id %llu twice or unknown",
		      (unsigned long long)wc.wr_id);
		if (wc.wr_id < TOTAL)
			seen[wc.wr_id] = 1;
		if (wc.status == IBV_WC_SUCCESS)
			ok++;
		else if (wc.status == IBV_WC_RETRY_EXC_ERR)
			retry_exc++;
		else if (wc.status == IBV_WC_WR_FLUSH_ERR)
			flushed++;
		else {
			fprintf(stderr, "survivor: unexpected status %s\n", rt_wc_status(wc.status));
			other++;
		}
		if (!killed && ok == pl.kill_after) {
			REQUIRE(kill(child, SIGKILL) == 0, "kill");
			int st;
			REQUIRE(waitpid(child, &st, 0) == child && WIFSIGNALED(st), "the victim did not die of SIGKILL");
			killed = true;
		}
		if (posted < TOTAL && retry_exc + flushed > 0 && posted == ok + retry_exc + flushed + other)
			break;  /* everything posted has completed; nothing more may be posted */
	}
	fprintf(stderr, "survivor: posted %u: %u ok, %u retry exceeded, %u flushed, %u other\n", posted, ok, retry_exc,
		flushed, other);
	REQUIRE(killed, "the victim was never killed");
	REQUIRE(ok >= pl.kill_after, "fewer successes than before the kill");
	REQUIRE(retry_exc == 1, "%u retry-exceeded completions, want exactly 1", retry_exc);
	REQUIRE(other == 0, "%u completions with another status", other);
	REQUIRE(ok + retry_exc + flushed == posted, "posted %u, completed %u", posted, ok + retry_exc + flushed);
	/* Nothing more comes: every WQE has completed exactly once. */
	struct ibv_wc extra;
	REQUIRE(!rt_wait_wc(&ep, &extra, 100), "a completion after all were accounted for");

	/* The path the environment asked for carried the traffic. */
	struct srt_stats_file st;
	const char *local = getenv("SOFTRNIC_LOCAL");
	rt_read_stats(&st, 0);
	rt_read_stats(&st, st.updated_ns);
	if (local && !strcmp(local, "0"))
		REQUIRE(st.runtime.local_tx_packets == 0, "SOFTRNIC_LOCAL=0, yet %llu packets went into rings",
		      (unsigned long long)st.runtime.local_tx_packets);
	else
		REQUIRE(st.runtime.local_tx_packets >= ok, "only %llu packets went into the local ring",
		      (unsigned long long)st.runtime.local_tx_packets);

	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	srt_lock(dev);
	REQUIRE(rnic_qp_query(qp, &attr, &init) == 0 && attr.qp_state == IBV_QPS_ERR,
	      "the survivor's QP is not in ERR");
	REQUIRE(rnic_qp_destroy(qp) == 0, "qp_destroy");
	srt_unlock(dev);
	rt_endpoint_fini(&ep);
	srt_close(dev);
	close(sv[0]);
	fprintf(stderr, "seed %lu: ok\n", seed);
}

/* Each seed in a process of its own: a fresh device, stats file and
 * QPN space, as a program that runs once has. */
int main(int argc, char **argv)
{
	int failed = 0;

	for (int i = 1; i < argc || i == 1; i++) {
		unsigned long seed = argc > 1 ? strtoul(argv[i], NULL, 0) : 1;
		fflush(stderr);
		pid_t pid = fork();
		REQUIRE(pid >= 0, "fork");
		if (pid == 0) {
			run_one(seed);
			_exit(0);
		}
		int st;
		REQUIRE(waitpid(pid, &st, 0) == pid, "waitpid");
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "seed %lu: FAILED\n", seed);
			failed++;
		}
	}
	return failed ? 1 : 0;
}
