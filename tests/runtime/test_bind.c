/*
 * test_bind.c — how the runtime chooses and binds its address, what it says
 * when it cannot, and the device's open/close/refcount and stats-file life.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_util.h"
#include "runtime/udp_port.h"

static char last_err[256];

static int open_with(const char *addr, const char *iface, struct srt_udp *u)
{
	if (addr) setenv("SOFTRNIC_ADDR", addr, 1); else unsetenv("SOFTRNIC_ADDR");
	if (iface) setenv("SOFTRNIC_IFACE", iface, 1); else unsetenv("SOFTRNIC_IFACE");
	last_err[0] = 0;
	int e = srt_udp_open(u, last_err, sizeof(last_err));
	unsetenv("SOFTRNIC_ADDR");
	unsetenv("SOFTRNIC_IFACE");
	return e;
}

static bool is_loopback(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

static void test_address_choice(void)
{
	struct srt_udp u1, u2, u3;
	char a1[INET_ADDRSTRLEN];

	REQUIRE(open_with(NULL, NULL, &u1) == 0, "default bind: %s", last_err);
	REQUIRE(open_with(NULL, NULL, &u2) == 0, "second default bind: %s", last_err);
	REQUIRE(is_loopback(u1.addr) && is_loopback(u2.addr), "default address is not 127.x");
	REQUIRE(u1.addr.s_addr != u2.addr.s_addr, "two devices got the same address");
	REQUIRE(u1.source == SRT_ADDR_LOOPBACK, "source");
	REQUIRE(!strcmp(u1.ifname, "lo"), "interface of 127.0.0.N is '%s', expected lo", u1.ifname);
	REQUIRE(u1.active_mtu == IBV_MTU_4096, "loopback active MTU %d, expected 4096", u1.active_mtu);
	inet_ntop(AF_INET, &u1.addr, a1, sizeof(a1));

	/* Explicit address already taken. */
	REQUIRE(open_with(a1, NULL, &u3) == EADDRINUSE, "SOFTRNIC_ADDR=%s in use: %s", a1, last_err);
	REQUIRE(strstr(last_err, a1) && strstr(last_err, "4791"), "message should name the address: %s", last_err);
	srt_udp_close(&u1);
	/* ... and free again. */
	REQUIRE(open_with(a1, NULL, &u3) == 0, "SOFTRNIC_ADDR=%s after close: %s", a1, last_err);
	REQUIRE(u3.addr.s_addr == u1.addr.s_addr && u3.source == SRT_ADDR_ENV_ADDR, "SOFTRNIC_ADDR not honoured");
	srt_udp_close(&u3);
	srt_udp_close(&u2);

	/* Bad configurations. */
	REQUIRE(open_with("not-an-ip", NULL, &u3) == EINVAL, "garbage address accepted");
	REQUIRE(strstr(last_err, "SOFTRNIC_ADDR=not-an-ip"), "message: %s", last_err);
	/* IPv6: the loopback address binds (where the host has IPv6), and
	 * the GID is the address itself. */
	int e6 = open_with("::1", NULL, &u3);
	REQUIRE(e6 == 0 || e6 == EADDRNOTAVAIL || e6 == EAFNOSUPPORT || e6 == EADDRINUSE, "SOFTRNIC_ADDR=::1: %s",
	      last_err);
	if (e6 == 0) {
		struct rnic_gid g;
		static const uint8_t loop6[16] = { [15] = 1 };
		srt_udp_gid(&u3, &g);
		REQUIRE(u3.v6 && !memcmp(g.raw, loop6, 16), "::1 did not become GID ::1");
		REQUIRE(u3.active_mtu == IBV_MTU_4096, "IPv6 loopback active MTU %d", u3.active_mtu);
		srt_udp_close(&u3);
	}
	REQUIRE(open_with("ff02::1", NULL, &u3) == EINVAL && strstr(last_err, "not a unicast IPv6 address"),
	      "IPv6 multicast accepted: %s", last_err);
	REQUIRE(open_with("::", NULL, &u3) == EINVAL, "IPv6 wildcard accepted");
	REQUIRE(open_with("::ffff:127.0.0.1", NULL, &u3) == EINVAL && strstr(last_err, "a.b.c.d"),
	      "IPv4-mapped IPv6 accepted: %s", last_err);
	REQUIRE(open_with("fe80::1", NULL, &u3) == EINVAL && strstr(last_err, "link-local"),
	      "link-local without an interface: %s", last_err);
	REQUIRE(open_with("fe80::1%nosuchif0", NULL, &u3) == EINVAL && strstr(last_err, "no such interface"),
	      "link-local with a missing interface: %s", last_err);
	REQUIRE(open_with("224.0.0.1", NULL, &u3) == EINVAL, "multicast accepted");
	REQUIRE(open_with("0.0.0.0", NULL, &u3) == EINVAL, "wildcard accepted");
	REQUIRE(open_with("192.0.2.1", NULL, &u3) == EADDRNOTAVAIL, "non-local address: %s", last_err);
	REQUIRE(strstr(last_err, "192.0.2.1:4791"), "message: %s", last_err);
	REQUIRE(open_with(NULL, "nosuchif0", &u3) == ENODEV, "missing interface: %s", last_err);
	REQUIRE(strstr(last_err, "nosuchif0"), "message: %s", last_err);

	/* SOFTRNIC_IFACE=lo -> lo's first IPv4 address, 127.0.0.1 (unless
	 * another process holds it right now). */
	int e = open_with(NULL, "lo", &u3);
	REQUIRE(e == 0 || e == EADDRINUSE, "SOFTRNIC_IFACE=lo: %s", last_err);
	if (e == 0) {
		REQUIRE(u3.addr.s_addr == htonl(0x7f000001), "SOFTRNIC_IFACE=lo did not bind 127.0.0.1");
		REQUIRE(u3.source == SRT_ADDR_ENV_IFACE, "source");
		srt_udp_close(&u3);
	}
}

/* srt_open failure: NULL, errno, and a message on stderr. */
static void test_open_failure(void)
{
	char path[] = "/tmp/softrnic-test-bind-XXXXXX";
	int tmp = mkstemp(path);
	REQUIRE(tmp >= 0, "mkstemp");
	int saved = dup(2);
	dup2(tmp, 2);
	setenv("SOFTRNIC_ADDR", "192.0.2.1", 1);
	errno = 0;
	struct srt_device *dev = srt_open();
	int e = errno;
	unsetenv("SOFTRNIC_ADDR");
	dup2(saved, 2);
	close(saved);

	char msg[512] = "";
	ssize_t n = pread(tmp, msg, sizeof(msg) - 1, 0);
	msg[n > 0 ? n : 0] = 0;
	close(tmp);
	unlink(path);
	REQUIRE(dev == NULL, "srt_open should fail for 192.0.2.1");
	REQUIRE(e == EADDRNOTAVAIL, "errno %d", e);
	REQUIRE(strstr(msg, "softrnic:") && strstr(msg, "192.0.2.1:4791"), "stderr message: '%s'", msg);
}

static int hook_calls;
static void count_async(void *ctx, enum ibv_event_type type, void *obj)
{
	(void)ctx; (void)type; (void)obj;
	hook_calls++;
}

static void test_device_lifecycle(void)
{
	struct srt_device *dev = srt_open();
	REQUIRE(dev != NULL, "srt_open: %s", strerror(errno));
	REQUIRE(srt_open() == dev, "second srt_open must return the same device");
	REQUIRE(!strcmp(srt_name(dev), "softrnic0"), "name");
	REQUIRE(srt_active_mtu(dev) == IBV_MTU_4096, "active MTU");
	const struct rnic_gid *gid = srt_gid(dev);
	REQUIRE(gid->raw[10] == 0xff && gid->raw[11] == 0xff && gid->raw[12] == 127, "GID is not ::ffff:127.x");

	srt_lock(dev);
	const struct rnic_config *cfg = rnic_get_config(srt_rnic(dev));
	REQUIRE(!memcmp(cfg->gid.raw, gid->raw, 16), "rnic config GID differs");
	srt_unlock(dev);

	struct srt_hooks hooks = { .async_event = count_async };
	int h1 = srt_add_hooks(dev, &hooks);
	int h2 = srt_add_hooks(dev, &hooks);
	REQUIRE(h1 >= 0 && h2 >= 0 && h1 != h2, "hook handles");
	srt_remove_hooks(dev, h1);
	srt_remove_hooks(dev, h2);
	srt_kick(dev);

	struct srt_stats_file st;
	rt_read_stats(&st, 0);
	REQUIRE(!strcmp(st.name, "softrnic0") && !memcmp(st.gid, gid->raw, 16), "stats file identity");
	REQUIRE(st.pid == getpid(), "stats pid");

	/* A child process gets its own device and address. */
	int pipefd[2];
	REQUIRE(pipe(pipefd) == 0, "pipe");
	pid_t child = fork();
	if (child == 0) {
		alarm(20);   /* a hung child dies and the parent says so */
		close(pipefd[0]);
		struct srt_device *cdev = srt_open();
		uint8_t g[16] = { 0 };
		if (cdev)
			memcpy(g, srt_gid(cdev)->raw, 16);
		ssize_t w = write(pipefd[1], g, 16);
		srt_close(cdev);
		_exit(cdev && w == 16 ? 0 : 1);
	}
	uint8_t cg[16];
	close(pipefd[1]);   /* a child that dies unwritten gives end-of-file */
	REQUIRE(read(pipefd[0], cg, 16) == 16, "child GID");
	int status;
	REQUIRE(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed");
	close(pipefd[0]);
	REQUIRE(cg[12] == 127 && memcmp(cg, gid->raw, 16) != 0, "child should bind another 127.0.0.N");

	srt_close(dev);
	REQUIRE(srt_stats_read(getpid(), &st) == 0, "stats gone while still referenced");
	srt_close(dev);
	REQUIRE(srt_stats_read(getpid(), &st) == ENOENT, "stats file not removed at close");
	REQUIRE(hook_calls == 0, "no async events expected");

	/* Open again after a full close. */
	dev = srt_open();
	REQUIRE(dev != NULL, "re-open: %s", strerror(errno));
	srt_close(dev);
}

int main(void)
{
	unsetenv("SOFTRNIC_ADDR");
	unsetenv("SOFTRNIC_IFACE");
	test_address_choice();
	test_open_failure();
	test_device_lifecycle();
	printf("bind: ok\n");
	return 0;
}
