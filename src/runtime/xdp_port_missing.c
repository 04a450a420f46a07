/*
 * xdp_port_missing.c — the AF_XDP port (xdp_port.h) of a softrnic built
 * without libxdp, libbpf or clang's BPF target: asking for it says so,
 * and the device goes on with its UDP socket.
 */
#include "runtime/xdp_port.h"

#include <stdio.h>

struct srt_xdp *srt_xdp_open(const char *ifname, struct in_addr addr, const struct srt_xdp_steer *steer,
			     enum srt_xdp_mode mode, char *err, size_t errlen)
{
	(void)ifname;
	(void)addr;
	(void)steer;
	(void)mode;
	snprintf(err, errlen, "this softrnic was built without AF_XDP support (libxdp, libbpf, clang)");
	return NULL;
}

void srt_xdp_close(struct srt_xdp *x)
{
	(void)x;
}

void srt_xdp_detach(struct srt_xdp *x)
{
	(void)x;
}

void srt_xdp_close_inherited(struct srt_xdp *x)
{
	(void)x;
}
