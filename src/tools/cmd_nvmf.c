/*
 * cmd_nvmf.c — `softrnic nvmf ...`: NVMe over Fabrics on softrnic (serve
 * a target, discover, perf).  It lives in its own program,
 * bin/softrnic-nvmf (src/nvmf/nvmf_main.c), because that one is an
 * application of libibverbs and librdmacm while this tool links the
 * runtime itself; `softrnic nvmf` runs the softrnic-nvmf found next to
 * this executable with the same arguments.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/commands.h"

int cmd_nvmf(const struct cli_args *a)
{
	char self[PATH_MAX], path[PATH_MAX + 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0) {
		fprintf(stderr, "softrnic nvmf: cannot find this program: %s\n", strerror(errno));
		return 2;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(path, sizeof(path), "%s/softrnic-nvmf", self);
	/* The arguments as given; argv[0] names the command in its messages. */
	a->rest[0] = (char *)"softrnic nvmf";
	execv(path, a->rest);
	fprintf(stderr, "softrnic nvmf: cannot run %s: %s\n", path, strerror(errno));
	return 2;
}
