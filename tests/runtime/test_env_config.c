/*
 * test_env_config.c — SOFTRNIC_* values the library does not understand
 * are refused when a device is opened (runtime/env_config.h), seen as a
 * program sees it through softrnic's libibverbs.so.1:
 *   - each bad value: the device is listed, ibv_open_device returns NULL
 *     with errno EINVAL, and stderr holds exactly one line, "softrnic:
 *     NAME=VALUE: why";
 *   - an unknown name in a family the library owns (SOFTRNIC_CC_*, ...)
 *     likewise, with "unknown variable";
 *   - good values, the names the tests and scripts use and SOFTRNIC_*
 *     names outside the families open the device with nothing on stderr;
 *   - after a refusal the next open (the value fixed) succeeds.
 * usage: test_env_config
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

static int failures;

#define FAIL(...)                                   \
	do {                                        \
		printf("FAIL: " __VA_ARGS__);       \
		printf("\n");                       \
		failures++;                         \
	} while (0)

/* Opens and closes the device with stderr caught in err[]; the context
 * opened (closed already) or NULL, errno in *e. */
static bool try_open(char *err, size_t cap, int *e)
{
	char path[] = "/tmp/test_env_config.XXXXXX";
	int fd = mkstemp(path), saved = dup(2), n = 0;
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	ssize_t r;

	unlink(path);
	fflush(stderr);
	dup2(fd, 2);
	list = ibv_get_device_list(&n);
	errno = 0;
	if (list && n == 1)
		ctx = ibv_open_device(list[0]);
	*e = errno;
	if (ctx)
		ibv_close_device(ctx);
	if (list)
		ibv_free_device_list(list);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	r = pread(fd, err, cap - 1, 0);
	err[r > 0 ? r : 0] = 0;
	close(fd);
	if (!list || n != 1)
		FAIL("ibv_get_device_list: %d devices", n);
	return ctx != NULL;
}

static void refused(const char *name, const char *value, const char *why)
{
	char err[4096], want[256];
	int e;

	setenv(name, value, 1);
	bool opened = try_open(err, sizeof(err), &e);
	unsetenv(name);
	/* A fault spec is quoted (docs/capture_and_faults.md). */
	bool quoted = !strcmp(name, "SOFTRNIC_FAULTS");
	snprintf(want, sizeof(want), "softrnic: %s=%s%s%s: ", name, quoted ? "\"" : "", value, quoted ? "\"" : "");
	if (opened)
		FAIL("%s=%s: the device opened", name, value);
	else if (e != EINVAL)
		FAIL("%s=%s: errno %s, want EINVAL", name, value, strerror(e));
	if (strncmp(err, want, strlen(want)) || !strstr(err, why) || strchr(err, '\n') != err + strlen(err) - 1)
		FAIL("%s=%s: stderr is not one line \"%s...%s...\":\n%s", name, value, want, why, err);
	else
		printf("ok   %s", err);
}

static void accepted(const char *name, const char *value)
{
	char err[4096];
	int e;

	setenv(name, value, 1);
	bool opened = try_open(err, sizeof(err), &e);
	unsetenv(name);
	if (!opened || err[0])
		FAIL("%s=%s: %s (errno %s), stderr:\n%s", name, value, opened ? "opened" : "refused", strerror(e), err);
	else
		printf("ok   %s=%s accepted\n", name, value);
}

int main(void)
{
	/* The values the brief of the check names, one by one. */
	refused("SOFTRNIC_LOCAL", "banana", "not one of 1, 0, packets");
	refused("SOFTRNIC_GSO", "maybe", "not one of 0, 1");
	refused("SOFTRNIC_CRC", "bogus", "not one of generic, vpclmulqdq-256");
	refused("SOFTRNIC_LOCAL_INLINE_MAX", "huge", "not a number in 0-1048576");
	refused("SOFTRNIC_LOCAL_INLINE_MAX", "2000000", "not a number in 0-1048576");
	refused("SOFTRNIC_CC_BOGUSPARAM", "1", "unknown variable");
	refused("SOFTRNIC_LINE_RATE", "-5", "not a number in 1-1000000");
	refused("SOFTRNIC_CC", "bogus", "not one of dcqcn, dctcp, timely");
	refused("SOFTRNIC_CC", "hpcc", "softrnic sim only");
	refused("SOFTRNIC_CC_PROFILE", "mlx6", "not one of mlx5, paper");
	refused("SOFTRNIC_CC_RPG_TIME_RESET", "abc", "not a number in");
	refused("SOFTRNIC_TIMELY_T_LOW", "50", "unknown variable");
	refused("SOFTRNIC_PCAP_LIMIT", "10X", "not a size");
	refused("SOFTRNIC_PCAP_OVERWRITE", "yes", "not one of 0, 1");
	refused("SOFTRNIC_SPORT", "random", "not one of flow, fixed");
	refused("SOFTRNIC_STATS_AT_EXIT", "true", "not one of 0, 1");
	refused("SOFTRNIC_ECN", "on", "not a number in 0-1");
	refused("SOFTRNIC_CM_RETRIES", "16", "not a number in 0-15");
	refused("SOFTRNIC_CM_TIMEOUT", "3", "unknown variable");
	refused("SOFTRNIC_FAULTS", "bogus=1", "unknown key");

	/* What the library, the tests and the scripts use. */
	accepted("SOFTRNIC_LOCAL", "packets");
	accepted("SOFTRNIC_LOCAL", "0");
	accepted("SOFTRNIC_LOCAL", "");
	accepted("SOFTRNIC_GSO", "0");
	accepted("SOFTRNIC_CRC", "generic");
	accepted("SOFTRNIC_LOCAL_INLINE_MAX", "0");
	accepted("SOFTRNIC_LOCAL_MSG_MIN", "4096");
	accepted("SOFTRNIC_CC", "dctcp");
	accepted("SOFTRNIC_CC_PROFILE", "paper");
	accepted("SOFTRNIC_CC_RPG_TIME_RESET", "55");
	accepted("SOFTRNIC_LINE_RATE", "1000");
	accepted("SOFTRNIC_TIMELY_T_LOW_US", "200");
	accepted("SOFTRNIC_PCAP_LIMIT", "20K");
	accepted("SOFTRNIC_PCAP_OVERWRITE", "1");
	accepted("SOFTRNIC_SPORT", "fixed");
	accepted("SOFTRNIC_STATS_AT_EXIT", "0");
	accepted("SOFTRNIC_CM_TRACE", "0");
	accepted("SOFTRNIC_SEED", "abc");
	accepted("SOFTRNIC_PRELOAD", "");
	accepted("SOFTRNIC_RSPRELOAD_EXPECT", "anything");
	accepted("SOFTRNIC_INTEROP_DIR", "/nowhere");
	accepted("SOFTRNIC_SOMETHING_OF_MINE", "x");
	if (failures)
		printf("%d failures\n", failures);
	return failures ? 1 : 0;
}
