/*
 * cmd_run.c — `softrnic run [--no-shim] [--] CMD [ARGS]`: runs a program on
 * softrnic without the user knowing about LD_LIBRARY_PATH.
 *
 * It finds softrnic's private library folder (the one holding its
 * libibverbs.so.1, librdmacm.so.1 and libsoftrnic_shim.so), puts it first
 * on LD_LIBRARY_PATH, preloads the shim (src/shim/shim.h: the
 * /sys/class/infiniband and /dev/infiniband entries middleware looks for)
 * and executes the command in place, so that its pid, signals and exit
 * status are the program's own.  Children inherit both variables, which is
 * how mpirun's ranks and a shell script's programs get the device too.
 *
 * The library folder, first found wins:
 *   $SOFTRNIC_LIBDIR                      (explicit)
 *   <dir of this binary>/../lib/softrnic   (installed: cmake --install)
 *   <dir of this binary>/../lib            (the build tree: build/bin, build/lib)
 * The libraries live in a folder of their own so that they never shadow
 * the system's rdma-core for programs not started through `softrnic run`.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"

#define SHIM_NAME "libsoftrnic_shim.so"

static bool has_libraries(const char *dir)
{
	char p[PATH_MAX];

	if (snprintf(p, sizeof(p), "%s/libibverbs.so.1", dir) >= (int)sizeof(p) || access(p, R_OK))
		return false;
	return snprintf(p, sizeof(p), "%s/" SHIM_NAME, dir) < (int)sizeof(p) && !access(p, R_OK);
}

/* Fills `dir` with softrnic's library folder; false if none is found. */
static bool find_libdir(char *dir, size_t cap)
{
	const char *env = getenv("SOFTRNIC_LIBDIR");
	static const char *const relative[] = { "../lib/softrnic", "../lib" };
	char exe[PATH_MAX], cand[PATH_MAX], *slash;
	ssize_t n;

	if (env && *env) {
		if (!realpath(env, dir) || !has_libraries(dir)) {
			fprintf(stderr, "softrnic run: SOFTRNIC_LIBDIR=%s has no libibverbs.so.1 and " SHIM_NAME "\n",
				env);
			return false;
		}
		return true;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return false;
	*slash = '\0';
	for (size_t i = 0; i < sizeof(relative) / sizeof(relative[0]); i++) {
		if (snprintf(cand, sizeof(cand), "%s/%s", exe, relative[i]) >= (int)sizeof(cand))
			continue;
		if (realpath(cand, dir) && strlen(dir) < cap && has_libraries(dir))
			return true;
	}
	fprintf(stderr, "softrnic run: no softrnic libraries beside %s (looked in ../lib/softrnic and ../lib;"
			" set SOFTRNIC_LIBDIR)\n", exe);
	return false;
}

/* Sets `name` to `first`, followed by its old value after `sep`, unless
 * the old value already starts with `first`. */
static int prepend_env(const char *name, const char *first, char sep)
{
	const char *old = getenv(name);
	size_t n = strlen(first);
	char *v;
	int rc;

	if (!old || !*old)
		return setenv(name, first, 1);
	if (!strncmp(old, first, n) && (old[n] == '\0' || old[n] == sep))
		return 0;
	v = malloc(n + strlen(old) + 2);
	if (!v)
		return -1;
	sprintf(v, "%s%c%s", first, sep, old);
	rc = setenv(name, v, 1);
	free(v);
	return rc;
}

int cmd_run(const struct cli_args *a)
{
	char libdir[PATH_MAX], shim[PATH_MAX + sizeof(SHIM_NAME) + 1];
	bool use_shim = !cli_flag(a, "--no-shim");

	if (!find_libdir(libdir, sizeof(libdir)))
		return 127;
	snprintf(shim, sizeof(shim), "%s/" SHIM_NAME, libdir);
	if (prepend_env("LD_LIBRARY_PATH", libdir, ':') || (use_shim && prepend_env("LD_PRELOAD", shim, ':'))) {
		fprintf(stderr, "softrnic run: %s\n", strerror(errno));
		return 127;
	}
	execvp(a->argv[0], a->argv);
	fprintf(stderr, "softrnic run: %s: %s\n", a->argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}
