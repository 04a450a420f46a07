/*
 * odp.c — on-demand paging: touching an ODP region without faulting.
 *
 * softrnic lives in the process and never pins memory, so every MR is
 * "on demand" in effect; what IBV_ACCESS_ON_DEMAND changes is the promise.
 * The range of an ODP MR need not be mapped when it is registered (an
 * implicit ODP MR covers the whole address space, addr NULL, length
 * SIZE_MAX), so a peer or a work request may name an address that is not
 * mapped at all, or mapped read-only.  A memcpy there would kill the
 * process with SIGSEGV; a NIC must instead complete with an error (remote
 * access error NAK for a peer, IBTA 9.7.5.2.4; local protection error for
 * a local SGE, IBTA 10.6.3.3).
 *
 * How: before the access, rnic_mr_check asks rnic_odp_range_ok to touch one
 * byte of every page in the range through process_vm_readv (and, for a
 * write, process_vm_writev of the same byte back) on our own pid.  Those
 * calls go through the kernel's page-table walk and return EFAULT instead
 * of raising a signal, and they fault pages in as a side effect, which is
 * what a prefetch wants too.
 *
 * Every MR access, ODP or not, is also a guarded copy (rnic_io.mem_copy:
 * in the runtime, a fault in the copy ends it with the same errors,
 * runtime/mem_guard.h); the probe is what lets an ODP range that was
 * never mapped be refused without a fault at all, and what a port
 * without the guard (the seeded pair, the simulator) relies on.
 *
 * Trade-offs, chosen deliberately:
 *  - Only ODP MRs pay for the probe (two syscalls per page); ordinary MRs
 *    were checked at registration (the kernel's pinning rule) and keep
 *    the guarded copy, whose cost is a sigsetjmp.
 *  - The probe and the later copy are not atomic: a thread may unmap the
 *    buffer between the two.  Hardware ODP tolerates that race through
 *    MMU notifiers; in the runtime the guarded copy catches it and the
 *    access ends in the same error; without the guard it would fault.
 *  - The write probe stores back the byte it just read.  The byte lies
 *    inside the range the operation is about to overwrite, whose contents
 *    the application may not rely on meanwhile, so the store is harmless.
 */
#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rnic/rnic_int.h"

static uint64_t page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps > 0 ? (uint64_t)ps : 4096;
}

/* One byte at va: readable (and writable if asked) without a fault? */
static bool touch_byte(pid_t self, uint64_t va, bool want_write)
{
	unsigned char byte;
	struct iovec local = { .iov_base = &byte, .iov_len = 1 };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)va, .iov_len = 1 };

	if (process_vm_readv(self, &local, 1, &remote, 1, 0) != 1)
		return false;
	if (want_write && process_vm_writev(self, &local, 1, &remote, 1, 0) != 1)
		return false;
	return true;
}

bool rnic_odp_range_ok(uint64_t va, uint64_t len, bool want_write)
{
	uint64_t ps, end, at;
	pid_t self;

	if (len == 0)
		return true;
	if (va + len < va || va + len - 1 > UINTPTR_MAX)
		return false;
	ps = page_size();
	self = getpid();
	end = va + len;
	/* First byte of the range, then the first byte of each later page. */
	for (at = va; at < end; at = (at | (ps - 1)) + 1) {
		if (!touch_byte(self, at, want_write))
			return false;
		if ((at | (ps - 1)) == UINT64_MAX)
			break;
	}
	return true;
}
