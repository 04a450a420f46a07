/*
 * port_event_test.c — the port follows the link of its interface
 * (runtime/link_monitor.h): run by port_event_test.sh inside a network
 * namespace of its own, with SOFTRNIC_IFACE=<own> on one end of a veth
 * pair.
 *
 * Opens the device twice (two contexts: every open context must hear a
 * port event), then changes the link with `ip` and checks, for each
 * change, that each context's async fd delivers exactly the expected
 * event (IBV_EVENT_PORT_ERR / PORT_ACTIVE, element.port_num 1) within a
 * few seconds and that ibv_query_port reports the state and physical
 * state rxe would (ACTIVE/LinkUp 5, DOWN/Polling 2 when the carrier or
 * the address is gone, DOWN/Disabled 3 when the link is set down).
 *
 * usage: port_event_test <own-if> <peer-if> <own-addr/prefix>
 */
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "verbs_test_util.h"

#define NCTX 2
#define EVENT_WAIT_MS 5000

static struct ibv_context *ctx[NCTX];

static void run(const char *fmt, const char *a, const char *b)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), fmt, a, b);
	printf("+ %s\n", cmd);
	fflush(stdout);
	REQUIRE(system(cmd) == 0);
}

/* One event on context i's async fd, within EVENT_WAIT_MS; false if none. */
static bool next_event(int i, struct ibv_async_event *ev)
{
	struct pollfd p = { .fd = ctx[i]->async_fd, .events = POLLIN };

	if (poll(&p, 1, EVENT_WAIT_MS) != 1)
		return false;
	if (ibv_get_async_event(ctx[i], ev))
		return false;
	ibv_ack_async_event(ev);
	return true;
}

static void expect_port(const char *what, enum ibv_event_type type,
			enum ibv_port_state state, uint8_t phys_state)
{
	for (int i = 0; i < NCTX; i++) {
		struct ibv_async_event ev;
		struct ibv_port_attr pa;

		printf("%s: context %d\n", what, i);
		if (type != (enum ibv_event_type)-1) {
			bool got = next_event(i, &ev);

			CHECK(got);
			if (got) {
				if (ev.event_type != type)
					printf("  got event %s, want %s\n", ibv_event_type_str(ev.event_type),
					       ibv_event_type_str(type));
				CHECK(ev.event_type == type);
				CHECK(ev.element.port_num == 1);
			}
		}
		CHECK(ibv_query_port(ctx[i], 1, &pa) == 0);
		if (pa.state != state || pa.phys_state != phys_state)
			printf("  port state %s phys %u, want %s phys %u\n", ibv_port_state_str(pa.state),
			       pa.phys_state, ibv_port_state_str(state), phys_state);
		CHECK(pa.state == state);
		CHECK(pa.phys_state == phys_state);
	}
}

/* No event may be waiting (no duplicates, nothing spurious). */
static void expect_quiet(void)
{
	for (int i = 0; i < NCTX; i++) {
		struct pollfd p = { .fd = ctx[i]->async_fd, .events = POLLIN };

		CHECK(poll(&p, 1, 200) == 0);
	}
}

int main(int argc, char **argv)
{
	struct ibv_device_attr da;
	const char *own, *peer, *cidr;

	if (argc != 4) {
		fprintf(stderr, "usage: %s <own-if> <peer-if> <own-addr/prefix>\n", argv[0]);
		return 2;
	}
	own = argv[1];
	peer = argv[2];
	cidr = argv[3];
	setvbuf(stdout, NULL, _IOLBF, 0);

	for (int i = 0; i < NCTX; i++)
		ctx[i] = vt_open_device(NULL);
	CHECK(ibv_query_device(ctx[0], &da) == 0);
	CHECK(da.device_cap_flags & IBV_DEVICE_PORT_ACTIVE_EVENT);

	expect_port("start", (enum ibv_event_type)-1, IBV_PORT_ACTIVE, 5);
	expect_quiet();

	/* Carrier lost: our link is still up, so rxe says Polling. */
	run("ip link set dev %s down%s", peer, "");
	expect_port("peer down", IBV_EVENT_PORT_ERR, IBV_PORT_DOWN, 2);
	run("ip link set dev %s up%s", peer, "");
	expect_port("peer up", IBV_EVENT_PORT_ACTIVE, IBV_PORT_ACTIVE, 5);

	/* Our own link set down: Disabled. */
	run("ip link set dev %s down%s", own, "");
	expect_port("own down", IBV_EVENT_PORT_ERR, IBV_PORT_DOWN, 3);
	run("ip link set dev %s up%s", own, "");
	expect_port("own up", IBV_EVENT_PORT_ACTIVE, IBV_PORT_ACTIVE, 5);

	/* The address goes away and comes back. */
	run("ip addr del %s dev %s", cidr, own);
	expect_port("addr del", IBV_EVENT_PORT_ERR, IBV_PORT_DOWN, 2);
	run("ip addr add %s dev %s", cidr, own);
	expect_port("addr add", IBV_EVENT_PORT_ACTIVE, IBV_PORT_ACTIVE, 5);
	expect_quiet();

	for (int i = 0; i < NCTX; i++)
		CHECK(ibv_close_device(ctx[i]) == 0);
	printf("port_event_test: %s (%d failed checks)\n", check_failures ? "FAIL" : "PASS", check_failures);
	return check_failures ? 1 : 0;
}
